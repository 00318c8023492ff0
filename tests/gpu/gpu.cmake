# GPU tests (ctest label "gpu"): they skip with exit 77 and a reason when
# torch sees no CUDA device. record_check.py runs the Python examples under
# `memhist record` and compares with torch's own figures; sim_fidelity.py
# replays a real run's requests through the simulator and compares segments;
# layers_check.py checks the checkpointing estimate against a real
# checkpointed run. scripts/gpu_check.sh runs them all plus the overhead
# measurements.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND TARGET memhist_torch)
  add_test(NAME gpu_record_check
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/record_check.py
                   $<TARGET_FILE:memhist_cli> ${CMAKE_BINARY_DIR}/gpu_record_check)
  set_tests_properties(gpu_record_check PROPERTIES
    LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 1800
    ENVIRONMENT "MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1")
endif()

if(Python3_Interpreter_FOUND)
  add_test(NAME gpu_sim_fidelity COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/sim_fidelity.py)
  set_tests_properties(gpu_sim_fidelity PROPERTIES
    LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 1800
    ENVIRONMENT "MEMHIST=$<TARGET_FILE:memhist_cli>;MEMHIST_LIB=$<TARGET_FILE:memhist_shared>;MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};MH_BINARY_DIR=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
endif()
if(Python3_Interpreter_FOUND AND TARGET memhist_torch)
  add_test(NAME gpu_layers_check
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/layers_check.py
                   $<TARGET_FILE:memhist_cli> ${CMAKE_BINARY_DIR}/gpu_layers_check)
  set_tests_properties(gpu_layers_check PROPERTIES
    LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 1800
    ENVIRONMENT "MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1")
endif()
if(Python3_Interpreter_FOUND AND TARGET memhist_torch)
  add_test(NAME gpu_stacks_check
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/stacks_check.py
                   $<TARGET_FILE:memhist_cli> ${CMAKE_BINARY_DIR}/gpu_stacks_check)
  set_tests_properties(gpu_stacks_check PROPERTIES
    LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 900
    ENVIRONMENT "MEMHIST_LIB_DIR=${CMAKE_BINARY_DIR};PYTHONPATH=${CMAKE_SOURCE_DIR}/src/python;PYTHONDONTWRITEBYTECODE=1")
endif()
# The same comparison on the virtual CUDA device (no GPU needed): torch's real
# caching allocator runs, so the allocations and their stacks are real.
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET mh_vdev_cuda)
  set(_mh_vd ${MH_VDEV_DIR})
  add_test(NAME vdevice_stacks_check
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/stacks_check.py
                   $<TARGET_FILE:memhist_cli> ${CMAKE_BINARY_DIR}/vdevice_stacks_check)
  set_tests_properties(vdevice_stacks_check PROPERTIES
    LABELS vdevice SKIP_RETURN_CODE 77 TIMEOUT 900
    ENVIRONMENT "LD_PRELOAD=${_mh_vd}/libcuda.so.1:${_mh_vd}/libcudart.so.13:${_mh_vd}/libcublas.so.13:${_mh_vd}/libcublasLt.so.13:${_mh_vd}/libnvidia-ml.so.1;MEMHIST_VDEVICE=1;MEMHIST_LIB_DIR=${CMAKE_BINARY_DIR};PYTHONPATH=${CMAKE_SOURCE_DIR}/src/python;PYTHONDONTWRITEBYTECODE=1")
endif()
# The virtual device against the real GPU it poses as: the same workloads,
# torch's own peaks, segments and OOMs on both (issue 12's comparison).
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET mh_vdev_cuda)
  add_test(NAME gpu_vdevice_fidelity
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/vdevice_vs_gpu.py
                   $<TARGET_FILE:memhist_cli> ${CMAKE_BINARY_DIR}/gpu_vdevice_fidelity
                   --json ${CMAKE_BINARY_DIR}/gpu_vdevice_fidelity/figures.json)
  set_tests_properties(gpu_vdevice_fidelity PROPERTIES
    LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 900
    ENVIRONMENT "MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1")
endif()
