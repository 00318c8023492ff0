# torch.cmake - the libtorch bridge (libmemhist_torch.so), its test and the
# libtorch example. Included by the top-level CMakeLists.txt.
#
# MEMHIST_WITH_TORCH: auto (build when a pip-installed torch with CUDA headers
# is found), ON (fail without it) or OFF. torch is located through the Python
# interpreter (torch.utils.cmake_prefix_path's package); we do not use
# find_package(Torch), which insists on a full CUDA toolkit. The bridge needs
# only headers plus libc10, libc10_cuda and libtorch_cpu (the allocator hooks
# are inline virtual calls), and the CUDA runtime headers that c10/cuda
# includes (a CUDA toolkit, or the nvidia-*-runtime pip wheel torch depends on).

if(MEMHIST_WITH_TORCH STREQUAL "OFF")
  message(STATUS "memhist: torch bridge disabled (MEMHIST_WITH_TORCH=OFF)")
  return()
endif()

function(mh_torch_skip why)
  if(MEMHIST_WITH_TORCH STREQUAL "ON")
    message(FATAL_ERROR "memhist: MEMHIST_WITH_TORCH=ON but ${why}")
  endif()
  message(STATUS "memhist: skipping the torch bridge: ${why}")
endfunction()

find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  mh_torch_skip("no Python interpreter found")
  return()
endif()

# Under pip (scikit-build-core) the build runs in an isolated environment that
# hides the packages already installed; the bridge must match the torch the
# package is installed next to, so torch is looked up without that isolation.
set(_mh_py_env)
if(SKBUILD)
  set(_mh_py_env ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONNOUSERSITE)
endif()
execute_process(
  COMMAND ${_mh_py_env} ${Python3_EXECUTABLE} -c "import os, torch; print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(torch.__version__)"
  OUTPUT_VARIABLE _mh_torch_out RESULT_VARIABLE _mh_torch_rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _mh_torch_rc EQUAL 0)
  mh_torch_skip("python3 cannot import torch")
  return()
endif()
string(REPLACE "\n" ";" _mh_torch_out "${_mh_torch_out}")
list(GET _mh_torch_out 0 MH_TORCH_DIR)
list(GET _mh_torch_out 1 MH_TORCH_CXX11_ABI)
list(GET _mh_torch_out 2 MH_TORCH_VERSION)

# The C++ standard torch's headers need: C++17 up to the releases whose
# TorchConfig.cmake asks for cxx_std_20 (the newest ones), C++20 after.
set(MH_TORCH_CXX_STANDARD 17)
file(GLOB _mh_torch_config ${MH_TORCH_DIR}/share/cmake/Torch/TorchConfig.cmake)
if(_mh_torch_config)
  file(READ ${_mh_torch_config} _mh_torch_config_text)
  if(_mh_torch_config_text MATCHES "cxx_std_20")
    set(MH_TORCH_CXX_STANDARD 20)
  endif()
endif()

set(MH_TORCH_INCLUDES ${MH_TORCH_DIR}/include ${MH_TORCH_DIR}/include/torch/csrc/api/include)
if(NOT EXISTS ${MH_TORCH_DIR}/include/c10/cuda/CUDACachingAllocator.h)
  mh_torch_skip("torch ${MH_TORCH_VERSION} has no CUDA headers (a CPU-only build)")
  return()
endif()

# CUDA runtime headers: a toolkit, or the nvidia pip wheels next to torch.
file(GLOB _mh_cuda_wheel_incs ${MH_TORCH_DIR}/../nvidia/*/include)
find_path(MH_CUDA_INCLUDE cuda_runtime_api.h
  HINTS $ENV{CUDA_HOME}/include $ENV{CUDA_PATH}/include /usr/local/cuda/include ${_mh_cuda_wheel_incs})
if(NOT MH_CUDA_INCLUDE)
  mh_torch_skip("cuda_runtime_api.h not found (set CUDA_HOME or install the nvidia-cuda-runtime wheel)")
  return()
endif()

set(MH_TORCH_LIBS)
foreach(lib c10 c10_cuda torch_cpu)
  find_library(MH_TORCH_LIB_${lib} ${lib} PATHS ${MH_TORCH_DIR}/lib NO_DEFAULT_PATH)
  if(NOT MH_TORCH_LIB_${lib})
    mh_torch_skip("lib${lib}.so not found in ${MH_TORCH_DIR}/lib")
    return()
  endif()
  list(APPEND MH_TORCH_LIBS ${MH_TORCH_LIB_${lib}})
endforeach()
message(STATUS "memhist: torch bridge against torch ${MH_TORCH_VERSION} (${MH_TORCH_DIR}), "
               "_GLIBCXX_USE_CXX11_ABI=${MH_TORCH_CXX11_ABI}, C++${MH_TORCH_CXX_STANDARD}, CUDA headers ${MH_CUDA_INCLUDE}")

# Settings every C++ target compiled against torch shares.
function(mh_torch_target t)
  target_include_directories(${t} SYSTEM PRIVATE ${MH_TORCH_INCLUDES} ${MH_CUDA_INCLUDE})
  target_include_directories(${t} PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src/record)
  target_compile_definitions(${t} PRIVATE _GLIBCXX_USE_CXX11_ABI=${MH_TORCH_CXX11_ABI})
  target_compile_options(${t} PRIVATE -Wno-unused-parameter)
  mh_tls_descriptors(${t})
  set_target_properties(${t} PROPERTIES CXX_STANDARD ${MH_TORCH_CXX_STANDARD} CXX_STANDARD_REQUIRED ON
                        BUILD_RPATH "${MH_TORCH_DIR}/lib;${CMAKE_BINARY_DIR}")
endfunction()

add_library(memhist_torch SHARED ${CMAKE_SOURCE_DIR}/src/record/torch_bridge.cpp
                                 ${CMAKE_SOURCE_DIR}/src/record/torch_steps.cpp)
mh_torch_target(memhist_torch)
target_link_libraries(memhist_torch PRIVATE memhist_shared ${MH_TORCH_LIBS} ${CMAKE_DL_LIBS}
                      -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/exports.map)
set_target_properties(memhist_torch PROPERTIES OUTPUT_NAME memhist_torch
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# The module scope hooks in C (libmemhist_pyhook.so, src/pyhook): built
# against the headers of the interpreter torch runs under (the backward hooks
# unwrap torch's tensor objects); without them the package's Python hooks serve.
execute_process(
  COMMAND ${_mh_py_env} ${Python3_EXECUTABLE} -c "import sysconfig; print(sysconfig.get_paths()['include'])"
  OUTPUT_VARIABLE MH_PYTHON_INCLUDE ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
if(MH_PYTHON_INCLUDE AND EXISTS ${MH_PYTHON_INCLUDE}/Python.h)
  add_library(memhist_pyhook SHARED ${CMAKE_SOURCE_DIR}/src/pyhook/scopehook.c
                                    ${CMAKE_SOURCE_DIR}/src/pyhook/scopemon.c
                                    ${CMAKE_SOURCE_DIR}/src/pyhook/scopecall.c
                                    ${CMAKE_SOURCE_DIR}/src/pyhook/scopegrad.cpp
                                    ${CMAKE_SOURCE_DIR}/src/pyhook/tensortag.cpp)
  mh_torch_target(memhist_pyhook)
  target_include_directories(memhist_pyhook SYSTEM PRIVATE ${MH_PYTHON_INCLUDE} ${MH_TORCH_DIR}/include/torch/csrc/api/include)
  target_include_directories(memhist_pyhook PRIVATE ${CMAKE_SOURCE_DIR}/src/model  # addrmap.h, in libmemhist
                                                    ${CMAKE_SOURCE_DIR}/src/record) # pystack.h, in libmemhist
  target_link_libraries(memhist_pyhook PRIVATE memhist_shared ${MH_TORCH_LIBS}
                        -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/exports.map)
  set_target_properties(memhist_pyhook PROPERTIES OUTPUT_NAME memhist_pyhook
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
else()
  message(STATUS "memhist: no Python.h for ${Python3_EXECUTABLE}: module scopes use the Python hooks")
endif()

# The libtorch example: a training loop recorded through the C API. It needs
# the full libtorch (torch/torch.h, libtorch.so pulls in libtorch_cuda).
file(GLOB MH_CPP_EXAMPLES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/examples/cpp/*.cpp)
find_library(MH_TORCH_LIB_torch torch PATHS ${MH_TORCH_DIR}/lib NO_DEFAULT_PATH)
if(MH_TORCH_LIB_torch AND MEMHIST_EXAMPLES)
  foreach(src ${MH_CPP_EXAMPLES})
    get_filename_component(n ${src} NAME_WE)
    add_executable(example_cpp_${n} ${src})
    mh_torch_target(example_cpp_${n})
    target_link_libraries(example_cpp_${n} PRIVATE memhist_torch memhist_shared
                          -Wl,--no-as-needed ${MH_TORCH_LIB_torch} -Wl,--as-needed ${MH_TORCH_LIBS})
  endforeach()
endif()

# The bridge's CPU test: constructed TraceEntry objects, ranges, calibration.
if(MEMHIST_TESTS)
  file(GLOB MH_TORCH_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/torch/test_*.cpp)
  foreach(src ${MH_TORCH_TESTS})
    get_filename_component(n ${src} NAME_WE)
    add_executable(${n} ${src})
    mh_torch_target(${n})
    target_link_libraries(${n} PRIVATE memhist_torch memhist_shared ${MH_TORCH_LIBS})
    target_compile_definitions(${n} PRIVATE MH_BINARY_DIR="${CMAKE_BINARY_DIR}")
    add_test(NAME ${n} COMMAND ${n})
    set_tests_properties(${n} PROPERTIES LABELS torch TIMEOUT 300
                         ENVIRONMENT "TORCH_SYMBOLIZE_MODE=dladdr;TORCH_DISABLE_ADDR2LINE=1")
  endforeach()
endif()
