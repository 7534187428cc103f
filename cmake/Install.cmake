# Install rules (`make install PREFIX=DIR`, or `cmake --install build --prefix DIR`):
#
#   bin/udiagd  bin/udiag
#   lib/libudiag.so -> libudiag.so.0 -> libudiag.so.<version>
#   lib/libudiag-preload.so (LD_PRELOAD drop-in, docs/dropin.md)
#   lib/libudiag-mmio.so -> libudiag-mmio.so.0 -> ... (access probes, docs/mmio.md)
#   lib/libudiag-mmiotrace.so (udiag mmiotrace's mapping hooks, docs/mmiotrace.md)
#   include/udiag/*.h *.hpp
#   lib/pkgconfig/udiag.pc
#   lib/cmake/udiag/{udiagConfig,udiagConfigVersion,udiagTargets*}.cmake

include(CMakePackageConfigHelpers)
set(UDIAG_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/udiag")

# The programs find an installed libudiag beside them, wherever the prefix is.
set_target_properties(udiagd udiag_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS udiagd udiag_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(DIRECTORY include/udiag DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

add_library(udiag::udiag ALIAS udiag)
install(TARGETS udiag EXPORT udiagTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS udiag-preload udiag-mmio udiag-mmiotrace LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT udiagTargets NAMESPACE udiag:: DESTINATION ${UDIAG_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/udiagConfig.cmake.in "${PROJECT_BINARY_DIR}/cmake/udiagConfig.cmake"
                              INSTALL_DESTINATION ${UDIAG_INSTALL_CMAKEDIR})
# 0.x: a minor version bump may change the ABI.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/cmake/udiagConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/cmake/udiagConfig.cmake" "${PROJECT_BINARY_DIR}/cmake/udiagConfigVersion.cmake"
        DESTINATION ${UDIAG_INSTALL_CMAKEDIR})

# The .pc file locates the prefix from its own directory, so it stays right
# whatever --prefix the install is given.
file(RELATIVE_PATH UDIAG_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" UDIAG_PC_UP "${UDIAG_PC_UP}")
configure_file(cmake/udiag.pc.in "${PROJECT_BINARY_DIR}/cmake/udiag.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/cmake/udiag.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
