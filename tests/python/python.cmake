# Python cross-checks: every tests/python/test_*.py runs as one ctest test with
# python3. The environment gives MEMHIST (the CLI binary), MH_SOURCE_DIR and
# MH_BINARY_DIR; a script exits 77 to report a skip (with its reason printed).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  file(GLOB MH_PY_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/test_*.py)
  foreach(src ${MH_PY_TESTS})
    get_filename_component(name ${src} NAME_WE)
    add_test(NAME python_${name} COMMAND ${Python3_EXECUTABLE} ${src})
    set_tests_properties(python_${name} PROPERTIES
      LABELS python SKIP_RETURN_CODE 77 TIMEOUT 900
      ENVIRONMENT "MEMHIST=$<TARGET_FILE:memhist_cli>;MH_SOURCE_DIR=${CMAKE_SOURCE_DIR};MH_BINARY_DIR=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
  endforeach()
endif()
