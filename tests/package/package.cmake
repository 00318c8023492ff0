# Packaging tests (ctest label "package"): tests/package/test_install.py
# (cmake --install into a moved prefix, consumers through find_package and
# pkg-config), test_wheel.py (pip wheel into a fresh virtual environment) and
# test_docs.py (the man page and completions generated from the help texts).
# Install and wheel tests check the plain build: sanitizer and fuzzing builds
# make libraries that plain consumers cannot load, so they are left out there.
find_package(Python3 COMPONENTS Interpreter)
set(_mh_package_tests docs)
if(MEMHIST_SANITIZE STREQUAL "" AND NOT MEMHIST_FUZZ)
  list(APPEND _mh_package_tests install wheel)
endif()
if(Python3_Interpreter_FOUND)
  foreach(name ${_mh_package_tests})
    add_test(NAME package_${name} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_${name}.py)
    set_tests_properties(package_${name} PROPERTIES
      LABELS package SKIP_RETURN_CODE 77 TIMEOUT 1200
      ENVIRONMENT "MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};MH_BINARY_DIR=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
  endforeach()
  if("wheel" IN_LIST _mh_package_tests)
    set_tests_properties(package_wheel PROPERTIES RUN_SERIAL ON)
  endif()
endif()
