# arrow.cmake - libmemhist_arrow.so: a recording's tables through the Arrow
# C data interface (include/memhist/arrow.h, src/export), for the Python
# package's memhist.read() and `memhist export`, loaded through ctypes.
#
# It holds everything the tables need: src/export and, compiled once more
# as position-independent code, the analyses and the simulator, with the
# reader and the model from the objects libmemhist.so is made of. Nothing
# of it goes into libmemhist.so, which the recorded program loads. It
# exports mh_arrow_* alone (arrow_exports.map), so its copies of the
# reader and the model never stand in for libmemhist.so's when both are
# loaded into one process. Included by the top-level CMakeLists.txt after
# the offline libraries.

# The objects of libmemhist.so as archives, so that only what the tables
# reach is linked in (the reader, not the recorder).
add_library(mh_model_pic STATIC $<TARGET_OBJECTS:mh_model_obj>)
set(_mh_arrow_inc ${CMAKE_SOURCE_DIR}/src/export ${CMAKE_SOURCE_DIR}/src/analysis
    ${CMAKE_SOURCE_DIR}/src/sim ${CMAKE_SOURCE_DIR}/src/model)
foreach(m sim analysis export)
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${m}/*.c)
  add_library(mh_${m}_pic_obj OBJECT ${_srcs})
  set_target_properties(mh_${m}_pic_obj PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(mh_${m}_pic_obj PRIVATE ${_mh_arrow_inc})
  target_compile_options(mh_${m}_pic_obj PRIVATE -fno-semantic-interposition)
endforeach()

add_library(memhist_arrow SHARED $<TARGET_OBJECTS:mh_export_pic_obj>
            $<TARGET_OBJECTS:mh_analysis_pic_obj> $<TARGET_OBJECTS:mh_sim_pic_obj>)
set_target_properties(memhist_arrow PROPERTIES OUTPUT_NAME memhist_arrow)
target_link_libraries(memhist_arrow PRIVATE mh_model_pic memhist_static Threads::Threads m)
target_link_options(memhist_arrow PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/arrow_exports.map)
if(MEMHIST_SANITIZE STREQUAL "" AND NOT MEMHIST_FUZZ)
  # (sanitizer runtimes are the executable's: a shared library leaves them undefined)
  target_link_options(memhist_arrow PRIVATE -Wl,--no-undefined)
endif()
set_property(TARGET memhist_arrow APPEND PROPERTY LINK_DEPENDS
             ${CMAKE_CURRENT_LIST_DIR}/arrow_exports.map)
