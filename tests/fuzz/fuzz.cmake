# libFuzzer targets: with MEMHIST_FUZZ=ON and clang, every
# tests/fuzz/fuzz_<module>_<what>.c becomes an executable built with
# -fsanitize=fuzzer,address,undefined and linked like the tests of its module.
# Seeds live in tests/fuzz/corpus/<module>/. Run e.g.
#   ./fuzz_format_reader -max_total_time=60 <copy of tests/fuzz/corpus/format>
if(MEMHIST_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(WARNING "MEMHIST_FUZZ needs clang; fuzz targets are not built")
  else()
    file(GLOB MH_FUZZERS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fuzz_*.c)
    foreach(src ${MH_FUZZERS})
      get_filename_component(name ${src} NAME_WE)
      string(REGEX REPLACE "^fuzz_([a-z]+)_.*$" "\\1" module ${name})
      if(module STREQUAL "record" OR module STREQUAL "format")
        set(libs memhist_static)
      elseif(module STREQUAL "viz")
        set(libs mh_viz)
      else()
        set(libs mh_viz mh_sim mh_model memhist_static)
      endif()
      # The in-process library's sources are compiled into format/record
      # fuzzers so that libFuzzer sees coverage of the code under test (the
      # objects of memhist_static are then not pulled from the archive).
      set(extra)
      if(module STREQUAL "record" OR module STREQUAL "format")
        set(extra ${MH_CORE_SOURCES})
      endif()
      add_executable(${name} ${src} ${extra})
      target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}
                                 ${MSGPACK_INCLUDE_DIRS})
      target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
      # the reader skips checksum checks in this mode so mutations reach the
      # decoders (the libFuzzer convention; never defined in normal builds)
      target_compile_definitions(${name} PRIVATE FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION)
      target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
      target_link_libraries(${name} PRIVATE ${libs} m)
    endforeach()
  endif()
endif()
