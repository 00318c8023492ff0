# The exported tables of a torchrun recording on the virtual device
# (check_export_ranks.py, label "vdevice"), and the same dataset queried by
# Spark in local mode (check_export_spark.py, label "spark": slow, a JVM
# starts; it needs the first test's dataset, a ctest fixture). The tests of
# the tables on simulated and imported recordings are
# tests/python/test_export_tables.py.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND TARGET memhist_torch AND TARGET vdevice AND TARGET memhist_arrow)
  set(_mh_export_out ${CMAKE_BINARY_DIR}/export_ranks)
  add_test(NAME vdevice_export_ranks
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_export_ranks.py ${_mh_export_out})
  set_tests_properties(vdevice_export_ranks PROPERTIES
    LABELS vdevice SKIP_RETURN_CODE 77 TIMEOUT 600 FIXTURES_SETUP export_ranks_dataset
    ENVIRONMENT "MEMHIST=$<TARGET_FILE:memhist_cli>;MH_BINARY_DIR=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
  add_test(NAME spark_export_ranks
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_export_spark.py ${_mh_export_out})
  set_tests_properties(spark_export_ranks PROPERTIES
    LABELS spark SKIP_RETURN_CODE 77 TIMEOUT 600 FIXTURES_REQUIRED export_ranks_dataset
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()
