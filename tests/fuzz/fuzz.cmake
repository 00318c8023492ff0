# libFuzzer targets: with MEMHIST_FUZZ=ON and clang, every
# tests/fuzz/fuzz_<module>_<what>.c becomes a fuzzer executable linked like the
# tests of its module. The top-level CMakeLists compiles the whole project with
# -fsanitize=fuzzer-no-link,address,undefined in that mode (undefined behaviour
# halts, as an address error does), so the parsers under test report coverage.
# fuzz_cli_* targets also compile the CLI sources (all but main.c) to run the
# commands in-process. Seeds live in tests/fuzz/corpus/<word>/ for a word in
# the fuzzer's name, or the one named on a "seeds: WORD" line of its source.
# Run e.g.
#   ./fuzz_format_reader -max_total_time=60 <copy of tests/fuzz/corpus/format>
if(MEMHIST_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(WARNING "MEMHIST_FUZZ needs clang; fuzz targets are not built")
  else()
    file(GLOB MH_FUZZERS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fuzz_*.c)
    foreach(src ${MH_FUZZERS})
      get_filename_component(name ${src} NAME_WE)
      string(REGEX REPLACE "^fuzz_([a-z]+)_.*$" "\\1" module ${name})
      mh_module_libs(${module} libs)
      if(module STREQUAL "cli")
        # the command-line analyses run in-process: every CLI source but main.c
        set(cli_srcs ${MH_CLI_SOURCES})
        list(FILTER cli_srcs EXCLUDE REGEX "/main\\.c$")
        add_executable(${name} ${src} ${cli_srcs})
        get_target_property(cli_libs memhist_cli LINK_LIBRARIES)
        target_link_libraries(${name} PRIVATE ${cli_libs})
      else()
        add_executable(${name} ${src})
      endif()
      target_include_directories(${name} PRIVATE ${MH_MODULE_DIRS_${module}}
                                 ${MSGPACK_INCLUDE_DIRS})
      target_link_options(${name} PRIVATE -fsanitize=fuzzer)
      target_link_libraries(${name} PRIVATE ${libs} m)
    endforeach()
  endif()
endif()
