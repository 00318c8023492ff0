# install.cmake - where `cmake --install` and the pip wheel put memhist, and
# the files that let other builds find it. Included by the top-level
# CMakeLists.txt after every target is defined.
#
# Prefix layout (GNUInstallDirs):
#   bin/memhist                          the command-line tool
#   lib/libmemhist.so*, libmemhist_torch.so, libmemhist_pyhook.so,
#   libmemhist_arrow.so (the tables, for memhist.read() and `memhist export`)
#   lib/memhist/vdevice/                 the virtual CUDA device's libraries
#   include/memhist/*.h
#   lib/cmake/memhist/memhistConfig*.cmake   imported target memhist::memhist
#   lib/pkgconfig/memhist.pc
#   share/memhist/python/memhist/        the Python package (with _install.py)
#   share/man/man1/memhist.1, share/bash-completion/completions/memhist,
#   share/zsh/site-functions/_memhist    generated from the help texts
# Wheel layout (SKBUILD, prefix = site-packages): the package at memhist/,
# the tool at memhist/bin/memhist, the libraries at memhist/lib/; the `memhist`
# console script runs the tool.
#
# Everything is relocatable: the tool finds the libraries and the Python
# package through paths relative to its own location (MH_REL_LIBDIR and
# MH_REL_PYDIR, compiled in), the Python package through _install.py, and
# the libraries find each other through $ORIGIN.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(SKBUILD)
  set(CMAKE_INSTALL_BINDIR memhist/bin)
  set(CMAKE_INSTALL_LIBDIR memhist/lib)
  set(MH_INSTALL_PYDIR .)
  # wheels hold no symbolic links: one file, named as the loader asks for it
  set_property(TARGET memhist_shared PROPERTY VERSION)
  set_property(TARGET memhist_shared PROPERTY SOVERSION)
else()
  set(MH_INSTALL_PYDIR ${CMAKE_INSTALL_DATADIR}/memhist/python)
endif()

# Relative paths from the installed tool's directory (and from the installed
# package's directory) to the other parts; computed on a fake root so that
# they hold for any prefix chosen at install time.
set(_mh_root /mh-prefix)
file(RELATIVE_PATH MH_REL_LIBDIR ${_mh_root}/${CMAKE_INSTALL_BINDIR} ${_mh_root}/${CMAKE_INSTALL_LIBDIR})
file(RELATIVE_PATH MH_REL_PYDIR ${_mh_root}/${CMAKE_INSTALL_BINDIR} ${_mh_root}/${MH_INSTALL_PYDIR})
file(RELATIVE_PATH MH_PKG_REL_LIBDIR ${_mh_root}/${MH_INSTALL_PYDIR}/memhist ${_mh_root}/${CMAKE_INSTALL_LIBDIR})
file(RELATIVE_PATH MH_PKG_REL_BINDIR ${_mh_root}/${MH_INSTALL_PYDIR}/memhist ${_mh_root}/${CMAKE_INSTALL_BINDIR})
file(RELATIVE_PATH MH_PC_REL_PREFIX ${_mh_root}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${_mh_root})
string(REGEX REPLACE "/$" "" MH_PC_REL_PREFIX "${MH_PC_REL_PREFIX}")
target_compile_definitions(memhist_cli PRIVATE MH_REL_LIBDIR="${MH_REL_LIBDIR}" MH_REL_PYDIR="${MH_REL_PYDIR}")

# The build tree works like an installed prefix: the tool finds the package
# at python/ next to it (a link to the sources, so edits take effect).
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/python)
file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/python/memhist ${CMAKE_BINARY_DIR}/python/memhist SYMBOLIC)

set_target_properties(memhist_cli PROPERTIES INSTALL_RPATH "$ORIGIN/${MH_REL_LIBDIR}")
set_target_properties(memhist_shared PROPERTIES INSTALL_RPATH "$ORIGIN" EXPORT_NAME memhist)

install(TARGETS memhist_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS memhist_shared EXPORT memhistTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS memhist_arrow LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
if(TARGET memhist_torch)
  # torch's own libraries are loaded by `import torch` before the bridge;
  # in a wheel they are also found next door in site-packages/torch/lib.
  set(_mh_torch_rpath "$ORIGIN")
  if(SKBUILD)
    list(APPEND _mh_torch_rpath "$ORIGIN/../../torch/lib")
  endif()
  set_target_properties(memhist_torch PROPERTIES INSTALL_RPATH "${_mh_torch_rpath}")
  install(TARGETS memhist_torch LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
endif()
if(TARGET memhist_pyhook)
  set_target_properties(memhist_pyhook PROPERTIES INSTALL_RPATH "${_mh_torch_rpath}")
  install(TARGETS memhist_pyhook LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
endif()

# The man page and bash/zsh completions, generated from the built tool's help
# texts (cmake/help_docs.py) so that they match what it does.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND NOT SKBUILD)
  set(_mh_docs ${CMAKE_BINARY_DIR}/docs)
  add_custom_command(
    OUTPUT ${_mh_docs}/man1/memhist.1 ${_mh_docs}/bash/memhist ${_mh_docs}/zsh/_memhist
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/help_docs.py $<TARGET_FILE:memhist_cli> ${_mh_docs}
    DEPENDS memhist_cli ${CMAKE_CURRENT_LIST_DIR}/help_docs.py
    COMMENT "memhist: man page and shell completions from the help texts")
  add_custom_target(memhist_docs ALL DEPENDS ${_mh_docs}/man1/memhist.1)
  install(FILES ${_mh_docs}/man1/memhist.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
  install(FILES ${_mh_docs}/bash/memhist DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
          COMPONENT runtime)
  install(FILES ${_mh_docs}/zsh/_memhist DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions
          COMPONENT runtime)
endif()

# The virtual CUDA device (cmake/vdevice.cmake) for `memhist simulate -- CMD`.
foreach(t mh_vdev_cuda mh_vdev_cudart mh_vdev_cublas mh_vdev_cublaslt mh_vdev_nvml)
  if(TARGET ${t})
    install(TARGETS ${t} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/memhist/vdevice COMPONENT runtime)
  endif()
endforeach()

# The package's record of where the libraries and the tool are, relative to
# it, and of the torch the bridge was built against.
set(MH_TORCH_VERSION_BUILT "")
if(TARGET memhist_torch)
  set(MH_TORCH_VERSION_BUILT "${MH_TORCH_VERSION}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/_install.py.in ${CMAKE_BINARY_DIR}/_install.py @ONLY)
if(SKBUILD)
  install(FILES ${CMAKE_BINARY_DIR}/_install.py DESTINATION memhist COMPONENT runtime)
else()
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/src/python/memhist DESTINATION ${MH_INSTALL_PYDIR}
          COMPONENT runtime PATTERN __pycache__ EXCLUDE)
  install(FILES ${CMAKE_BINARY_DIR}/_install.py DESTINATION ${MH_INSTALL_PYDIR}/memhist COMPONENT runtime)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/memhist DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          COMPONENT dev)

  install(EXPORT memhistTargets NAMESPACE memhist:: FILE memhistTargets.cmake
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memhist COMPONENT dev)
  configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/memhistConfig.cmake.in
    ${CMAKE_BINARY_DIR}/memhistConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memhist)
  write_basic_package_version_file(${CMAKE_BINARY_DIR}/memhistConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${CMAKE_BINARY_DIR}/memhistConfig.cmake ${CMAKE_BINARY_DIR}/memhistConfigVersion.cmake
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memhist COMPONENT dev)

  configure_file(${CMAKE_CURRENT_LIST_DIR}/memhist.pc.in ${CMAKE_BINARY_DIR}/memhist.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/memhist.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endif()
