# Ground truth on the virtual device (ctest label "vdevice"): one test per
# case of tests/vdevice/check_workload.py (the list comes from the script).
# Each records a PyTorch workload with memhist on the virtual CUDA device and
# compares it with torch's own figures of the same run, then checks the
# simulator's replay of it. Registered where the virtual device and the torch
# bridge are built (not in sanitizer builds); skipped (exit 77) without torch.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET vdevice)
  execute_process(COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_workload.py --list
                  OUTPUT_VARIABLE MH_VDEV_CASES OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(rc EQUAL 0)
    string(REPLACE "\n" ";" MH_VDEV_CASES "${MH_VDEV_CASES}")
  else()
    set(MH_VDEV_CASES "")
  endif()
  foreach(case ${MH_VDEV_CASES})
    add_test(NAME vdevice_truth_${case}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_workload.py ${case}
                     ${CMAKE_BINARY_DIR}/vdevice_truth/${case})
    set_tests_properties(vdevice_truth_${case} PROPERTIES
      LABELS vdevice SKIP_RETURN_CODE 77 TIMEOUT 600
      ENVIRONMENT "MEMHIST=$<TARGET_FILE:memhist_cli>;MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};MH_BINARY_DIR=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
  endforeach()
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
  foreach(case categories setup layers plan plan_function plan_named plan_method plan_cnn plan_shared names compiled teacher closure accumulate)
    add_test(NAME vdevice_answers_${case}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_answers.py ${case}
                     ${CMAKE_BINARY_DIR}/vdevice_answers/${case})
    set_tests_properties(vdevice_answers_${case} PROPERTIES
      LABELS vdevice SKIP_RETURN_CODE 77 TIMEOUT 600
      ENVIRONMENT "MEMHIST=$<TARGET_FILE:memhist_cli>;MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1")
  endforeach()
endif()

# Steps per device and the growth report (tests/vdevice/steps.py): two models
# on two devices in one process, a leak across steps and the same without it;
# steps from the record_function callback against the optimizer hooks; two
# optimizers per iteration; steps from torch.profiler ranges.
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET vdevice)
  foreach(case devices growth nogrowth rangehook optimizers profiler)
    add_test(NAME vdevice_steps_${case}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/steps.py ${case}
                     ${CMAKE_BINARY_DIR}/vdevice_steps/${case})
    set_tests_properties(vdevice_steps_${case} PROPERTIES
      LABELS vdevice SKIP_RETURN_CODE 77 TIMEOUT 600
      ENVIRONMENT "MEMHIST=$<TARGET_FILE:memhist_cli>;MH_BINARY_DIR=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
  endforeach()
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
