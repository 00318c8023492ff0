# Plain-program tests that also run under the thread sanitizer (label tsan).
file(GLOB MH_TSAN_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
foreach(src ${MH_TSAN_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(tsan_${name} ${src})
  target_link_libraries(tsan_${name} PRIVATE memhist_static)
  add_test(NAME tsan_${name} COMMAND tsan_${name})
  set_tests_properties(tsan_${name} PROPERTIES LABELS "record;tsan" TIMEOUT 600)
endforeach()
