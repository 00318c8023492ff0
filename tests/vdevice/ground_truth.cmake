# Ground truth on the virtual device (ctest label "vdevice"): one test per
# case of tests/vdevice/check_workload.py (`check_workload.py --list`;
# tests/python/test_layout.py checks that each is registered here).
# Each records a PyTorch workload with memhist on the virtual CUDA device and
# compares it with torch's own figures of the same run, then checks the
# simulator's replay of it. Registered where the virtual device and the torch
# bridge are built (not in sanitizer builds); skipped (exit 77) without torch.
find_package(Python3 COMPONENTS Interpreter)

# One test running `SCRIPT CASE DIR` (DIR: the build folder's FOLDER/CASE),
# with the CLI and the source and build folders in its environment. Each
# test is named in full where it is registered, so its name can be found.
function(mh_vdevice_case name script case folder)
  add_test(NAME ${name}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${script} ${case}
                   ${CMAKE_BINARY_DIR}/${folder}/${case})
  set_tests_properties(${name} PROPERTIES
    LABELS vdevice SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT "MEMHIST=$<TARGET_FILE:memhist_cli>;MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};MH_BINARY_DIR=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
endfunction()

if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET vdevice)
  mh_vdevice_case(vdevice_truth_gpt check_workload.py gpt vdevice_truth)
  mh_vdevice_case(vdevice_truth_gpt_ckpt check_workload.py gpt_ckpt vdevice_truth)
  mh_vdevice_case(vdevice_truth_conv check_workload.py conv vdevice_truth)
  mh_vdevice_case(vdevice_truth_amp check_workload.py amp vdevice_truth)
  mh_vdevice_case(vdevice_truth_streams check_workload.py streams vdevice_truth)
  mh_vdevice_case(vdevice_truth_streams_sync check_workload.py streams_sync vdevice_truth)
  mh_vdevice_case(vdevice_truth_expandable check_workload.py expandable vdevice_truth)
  mh_vdevice_case(vdevice_truth_max_split check_workload.py max_split vdevice_truth)
  mh_vdevice_case(vdevice_truth_gc_threshold check_workload.py gc_threshold vdevice_truth)
  mh_vdevice_case(vdevice_truth_oom check_workload.py oom vdevice_truth)
  mh_vdevice_case(vdevice_truth_two_devices check_workload.py two_devices vdevice_truth)
  mh_vdevice_case(vdevice_truth_data_parallel check_workload.py data_parallel vdevice_truth)
  mh_vdevice_case(vdevice_truth_example_train_gpt check_workload.py example_train_gpt vdevice_truth)
  mh_vdevice_case(vdevice_truth_example_checkpoint check_workload.py example_checkpoint vdevice_truth)
  mh_vdevice_case(vdevice_truth_example_oom check_workload.py example_oom vdevice_truth)
endif()

# The flame graph of an unchanged GPT-style script (tests/vdevice/check_flame.py):
# the module hierarchy names the transformer blocks, the counts sum to the live
# bytes at the peak.
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET vdevice)
  add_test(NAME vdevice_flame
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_flame.py
                   ${CMAKE_BINARY_DIR}/vdevice_flame)
  set_tests_properties(vdevice_flame PROPERTIES
    LABELS vdevice SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT "MEMHIST=$<TARGET_FILE:memhist_cli>;MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1")
endif()

# Answers on an unchanged GPT-style script (tests/vdevice/check_answers.py):
# categories against torch's tensors, set-up apart from step 0, layers named
# by module scopes, the checkpointing plan against measured peaks (also with the
# step in a function, with blocks kept as numbered attributes, run by a method
# of the model other than forward, on a
# ResNet-style network and with one block applied several times), and names
# for allocations with no Python frame; models under torch.compile; a teacher
# model of the same class beside the trained one; the forward and backward in
# an optimizer step's closure; gradient accumulation.
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET vdevice)
  mh_vdevice_case(vdevice_answers_categories check_answers.py categories vdevice_answers)
  mh_vdevice_case(vdevice_answers_setup check_answers.py setup vdevice_answers)
  mh_vdevice_case(vdevice_answers_layers check_answers.py layers vdevice_answers)
  mh_vdevice_case(vdevice_answers_plan check_answers.py plan vdevice_answers)
  mh_vdevice_case(vdevice_answers_plan_function check_answers.py plan_function vdevice_answers)
  mh_vdevice_case(vdevice_answers_plan_named check_answers.py plan_named vdevice_answers)
  mh_vdevice_case(vdevice_answers_plan_method check_answers.py plan_method vdevice_answers)
  mh_vdevice_case(vdevice_answers_plan_cnn check_answers.py plan_cnn vdevice_answers)
  mh_vdevice_case(vdevice_answers_plan_shared check_answers.py plan_shared vdevice_answers)
  mh_vdevice_case(vdevice_answers_names check_answers.py names vdevice_answers)
  mh_vdevice_case(vdevice_answers_compiled check_answers.py compiled vdevice_answers)
  mh_vdevice_case(vdevice_answers_teacher check_answers.py teacher vdevice_answers)
  mh_vdevice_case(vdevice_answers_closure check_answers.py closure vdevice_answers)
  mh_vdevice_case(vdevice_answers_accumulate check_answers.py accumulate vdevice_answers)
  mh_vdevice_case(vdevice_answers_roles check_answers.py roles vdevice_answers)
endif()

# Steps per device and the growth report (tests/vdevice/steps.py): two models
# on two devices in one process, a leak across steps and the same without it;
# steps from the record_function callback against the optimizer hooks; two
# optimizers per iteration; steps from torch.profiler ranges.
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET vdevice)
  mh_vdevice_case(vdevice_steps_devices steps.py devices vdevice_steps)
  mh_vdevice_case(vdevice_steps_growth steps.py growth vdevice_steps)
  mh_vdevice_case(vdevice_steps_nogrowth steps.py nogrowth vdevice_steps)
  mh_vdevice_case(vdevice_steps_rangehook steps.py rangehook vdevice_steps)
  mh_vdevice_case(vdevice_steps_optimizers steps.py optimizers vdevice_steps)
  mh_vdevice_case(vdevice_steps_profiler steps.py profiler vdevice_steps)
endif()

# The module scope hooks in C against the Python ones on the same unchanged
# script (tests/vdevice/check_scopes.py): every allocation's module, step and
# phase agree; scope_attr prints them from a recording.
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET memhist_pyhook AND TARGET vdevice)
  add_executable(scope_attr ${CMAKE_CURRENT_LIST_DIR}/scope_attr.c)
  target_link_libraries(scope_attr PRIVATE mh_model)
  add_test(NAME vdevice_scopes_native
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_scopes.py
                   ${CMAKE_BINARY_DIR}/vdevice_scopes_native)
  set_tests_properties(vdevice_scopes_native PROPERTIES
    LABELS vdevice SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT "MEMHIST=$<TARGET_FILE:memhist_cli>;MH_SCOPE_ATTR=$<TARGET_FILE:scope_attr>;MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1")
endif()

# Tests whose program runs on the virtual device directly (LD_PRELOAD of its
# libraries), as memhist.start() in a user's script finds it: SCRIPT gets the
# CLI and a work folder.
function(mh_add_preloaded_vdevice_test name script)
  set(preload "")
  foreach(lib libcuda.so.1 libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnvidia-ml.so.1)
    list(APPEND preload ${MH_VDEV_DIR}/${lib})
  endforeach()
  string(REPLACE ";" ":" preload "${preload}")
  add_test(NAME ${name}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${script}
                   $<TARGET_FILE:memhist_cli> ${CMAKE_BINARY_DIR}/${name})
  set_tests_properties(${name} PROPERTIES
    LABELS vdevice SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT "LD_PRELOAD=${preload};MEMHIST_VDEVICE=1;MEMHIST_LIB_DIR=${CMAKE_BINARY_DIR};PYTHONPATH=${CMAKE_SOURCE_DIR}/src/python;PYTHONDONTWRITEBYTECODE=1")
endfunction()

# A recording started in the middle of a program (check_midrun.py:
# memhist.start() after the model trained): torch's peaks, no contradiction,
# the blocks found live grouped and categorised, with the default allocator
# settings and with expandable segments.
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET vdevice)
  mh_add_preloaded_vdevice_test(vdevice_midrun check_midrun.py)
endif()

# The tensor role tags made in C (check_tags.py): once per role while a tensor
# keeps its memory, a parameter's new gradients in one slot, the slots of
# tensors that are gone dropped; the recording holds each tag.
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET memhist_pyhook AND TARGET vdevice)
  mh_add_preloaded_vdevice_test(vdevice_tags check_tags.py)
endif()

# Ending a program after N training steps (tests/vdevice/step_limit.py):
# `memhist simulate --steps N -- CMD` (MEMHIST_STOP_AFTER_STEPS) with the loop
# in the main thread and in a thread of its own, memhist.start(stop_after_steps=N)
# in-process, and a bad value (a warning, the program runs on).
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET vdevice)
  mh_vdevice_case(vdevice_step_limit_cli step_limit.py cli vdevice_step_limit)
  mh_vdevice_case(vdevice_step_limit_thread step_limit.py thread vdevice_step_limit)
  mh_vdevice_case(vdevice_step_limit_api step_limit.py api vdevice_step_limit)
  mh_vdevice_case(vdevice_step_limit_bad step_limit.py bad vdevice_step_limit)
endif()

# `memhist fit` end to end (tests/vdevice/fit.py): each card's answer checked by
# separate `memhist simulate` runs at the value that fits and the next one, on
# three presets and on three cards of one preset (shared runs, against plain
# bisection); bad input and failing programs (exit 2); memory that falls as
# the value grows (said not monotonic, answered truly).
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET vdevice)
  mh_vdevice_case(vdevice_fit_example fit.py example vdevice_fit)
  mh_vdevice_case(vdevice_fit_shared fit.py shared vdevice_fit)
  mh_vdevice_case(vdevice_fit_errors fit.py errors vdevice_fit)
  mh_vdevice_case(vdevice_fit_falling fit.py falling vdevice_fit)
endif()
