# Benchmarks: every tests/bench/bench_<module>_<what>.c is a plain C program
# (its own main) linked like the tests of its module. Built when MEMHIST_BENCH
# is ON; run them directly (they print one "name: value" line per figure).
if(MEMHIST_BENCH)
  file(GLOB MH_BENCHES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/bench_*.c)
  foreach(src ${MH_BENCHES})
    get_filename_component(name ${src} NAME_WE)
    string(REGEX REPLACE "^bench_([a-z]+)_.*$" "\\1" module ${name})
    mh_module_libs(${module} libs)
    add_executable(${name} ${src})
    target_include_directories(${name} PRIVATE ${MH_MODULE_DIRS_${module}}
                               ${CMAKE_CURRENT_LIST_DIR})
    target_link_libraries(${name} PRIVATE ${libs} m)
    target_compile_definitions(${name} PRIVATE MH_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  endforeach()
endif()
