# Packaging tests (ctest label "package"): tests/package/test_install.py
# (cmake --install into a moved prefix, consumers through find_package and
# pkg-config), test_wheel.py (pip wheel into a fresh virtual environment) and
# test_docs.py (the man page and completions generated from the help texts).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  foreach(name install wheel docs)
    add_test(NAME package_${name} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_${name}.py)
    set_tests_properties(package_${name} PROPERTIES
      LABELS package SKIP_RETURN_CODE 77 TIMEOUT 1200
      ENVIRONMENT "MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};MH_BINARY_DIR=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
  endforeach()
  set_tests_properties(package_wheel PROPERTIES RUN_SERIAL ON)
endif()
