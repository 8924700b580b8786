# install.cmake - what `cmake --install` puts in place (included by the top
# CMakeLists.txt after the targets exist):
#   bin/tilec, share/man/man1/tilec.1
#   lib/libtilec.so.X.Y.Z (SONAME libtilec.so.X), libtilec.a, and the same of tilert
#   include/tilec.h, include/tilert.h
#   lib/cmake/tilec/ (find_package(tilec): tilec::tilec, tilec::tilert, ...)
#   lib/pkgconfig/tilec.pc, tilert.pc
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TILEC_INSTALL_TARGETS tilert tilert_static)
if(TILEC_COMPILER)
  list(APPEND TILEC_INSTALL_TARGETS tilec tilec_static)
  install(TARGETS tilec_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/include/tilec.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/docs/tilec.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/include/tilert.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(TARGETS ${TILEC_INSTALL_TARGETS} EXPORT tilecTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
set(TILEC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tilec)
install(EXPORT tilecTargets NAMESPACE tilec:: DESTINATION ${TILEC_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tilecConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tilecConfig.cmake INSTALL_DESTINATION ${TILEC_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tilecConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tilecConfig.cmake ${PROJECT_BINARY_DIR}/tilecConfigVersion.cmake
        DESTINATION ${TILEC_CMAKE_DIR})

# pkg-config files find the prefix from their own folder (${pcfiledir}),
# so an installation moved or made with `cmake --install --prefix P` works.
file(RELATIVE_PATH TILEC_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
set(TILEC_PC_LIBS_PRIVATE "")
if(TILEC_COMPILER AND TILEC_WITH_LLVM)
  list(JOIN LLVM_LIBS " " _llvm_libs)
  list(JOIN LLVM_SYSLIBS " " _llvm_sys)
  set(TILEC_PC_LIBS_PRIVATE "-L${LLVM_LIB_DIR} ${_llvm_libs} ${_llvm_sys} -lstdc++ -lm")
endif()
set(TILERT_PC_CFLAGS "")
if(NOT DLPACK_INCLUDE_DIR STREQUAL "/usr/include")
  set(TILERT_PC_CFLAGS " -I${DLPACK_INCLUDE_DIR}")
endif()
set(_pc tilert)
if(TILEC_COMPILER)
  list(APPEND _pc tilec)
endif()
foreach(pc ${_pc})
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
