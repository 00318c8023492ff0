# cupti.cmake - the CUDA side of the CUPTI source. Included by the top-level
# CMakeLists.txt.
#
# The CUPTI source itself (src/record/cupti.c, inject.c) is always part of
# libmemhist: it dlopens libcupti at run time and includes no CUDA header, so
# it builds everywhere. This file only adds what needs the CUDA toolkit: the
# example examples/cuda/alloc_kernels.cu and its GPU check
# (tests/gpu/check_cuda_example.py, ctest label "gpu", skipped without a GPU).
#
# MEMHIST_WITH_CUPTI: auto (build the example when nvcc works), ON (fail
# without it) or OFF.

if(MEMHIST_WITH_CUPTI STREQUAL "OFF")
  message(STATUS "memhist: CUDA example disabled (MEMHIST_WITH_CUPTI=OFF)")
  return()
endif()

include(CheckLanguage)
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  check_language(CUDA)
endif()
if(NOT CUDAToolkit_FOUND OR NOT CMAKE_CUDA_COMPILER)
  if(MEMHIST_WITH_CUPTI STREQUAL "ON")
    message(FATAL_ERROR "memhist: MEMHIST_WITH_CUPTI=ON but no working CUDA toolkit (nvcc) was found")
  endif()
  message(STATUS "memhist: no CUDA toolkit; the CUDA example is not built (CUPTI recording still is)")
  return()
endif()

enable_language(CUDA)
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES 80 90)
endif()
add_executable(example_cuda_alloc_kernels ${CMAKE_SOURCE_DIR}/examples/cuda/alloc_kernels.cu)
set_target_properties(example_cuda_alloc_kernels PROPERTIES OUTPUT_NAME alloc_kernels
                      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/examples/cuda)
target_link_libraries(example_cuda_alloc_kernels PRIVATE CUDA::cudart CUDA::cuda_driver)
message(STATUS "memhist: CUDA example alloc_kernels (CUDA ${CUDAToolkit_VERSION})")

if(MEMHIST_TESTS)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    add_test(NAME gpu_cuda_example
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/gpu/check_cuda_example.py)
    set_tests_properties(gpu_cuda_example PROPERTIES
      LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600
      ENVIRONMENT "MEMHIST=$<TARGET_FILE:memhist_cli>;MEMHIST_LIB=$<TARGET_FILE:memhist_shared>;MH_CUDA_EXAMPLE=$<TARGET_FILE:example_cuda_alloc_kernels>;MH_BINARY_DIR=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
  endif()
endif()
