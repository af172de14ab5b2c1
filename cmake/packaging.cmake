# SPDX-License-Identifier: MIT
#
# Installing and packaging (docs/PACKAGING.md), included at the end of
# CMakeLists.txt once every target exists:
#   PREFIX/include/ustreams/         every public header (ustreams.h, stropts.h, xti.h,
#                                    sys/stream.h, ...) and the generated ustreams_version.h:
#                                    one directory of their own, so that a standard name
#                                    (stropts.h, xti.h, sys/stream.h) never shadows the
#                                    system's; pkg-config and the CMake targets add it
#   PREFIX/lib/libustreams.so.*, libxnet.so.*, the .a archives
#   PREFIX/lib/pkgconfig/ustreams.pc, xnet.pc
#   PREFIX/lib/cmake/ustreams/       ustreamsConfig.cmake, ustreamsConfigVersion.cmake,
#                                    ustreamsTargets*.cmake: find_package(ustreams CONFIG)
#                                    gives ustreams::ustreams, ustreams::xnet (and _static)
# The version is written once, in project(ustreams VERSION ...); the header
# <ustreams_version.h> (USTREAMS_GEN_INCLUDEDIR, configured in CMakeLists.txt),
# the libraries' VERSION/SOVERSION, the .pc files and the package version file
# all come from it.
include(CMakePackageConfigHelpers)

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/"
        DESTINATION ${USTREAMS_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES "${USTREAMS_GEN_INCLUDEDIR}/ustreams_version.h"
        DESTINATION ${USTREAMS_INSTALL_INCLUDEDIR})
install(TARGETS ustreams ustreams_static xnet xnet_static EXPORT ustreamsTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The .pc files are generated at install time, so that their prefix is the
# one actually installed to (`cmake --install build --prefix DIR` works as
# well as CMAKE_INSTALL_PREFIX).
foreach(_pc ustreams xnet)
    set(_pc_in "${PROJECT_SOURCE_DIR}/${_pc}.pc.in")
    set(_pc_out "${PROJECT_BINARY_DIR}/pkgconfig/${_pc}.pc")
    install(CODE "
        set(USTREAMS_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
        set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
        set(USTREAMS_INSTALL_INCLUDEDIR \"${USTREAMS_INSTALL_INCLUDEDIR}\")
        set(PROJECT_VERSION \"${PROJECT_VERSION}\")
        set(PROJECT_DESCRIPTION \"${PROJECT_DESCRIPTION}\")
        configure_file(\"${_pc_in}\" \"${_pc_out}\" @ONLY)
    ")
    install(FILES "${_pc_out}" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# find_package(ustreams CONFIG): relocatable (paths relative to the config
# file), so a tree installed with --prefix or DESTDIR and moved still works.
set(USTREAMS_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/ustreams")
install(EXPORT ustreamsTargets NAMESPACE ustreams:: DESTINATION ${USTREAMS_CMAKEDIR})
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/ustreamsConfig.cmake.in"
    "${PROJECT_BINARY_DIR}/cmake/ustreamsConfig.cmake"
    INSTALL_DESTINATION ${USTREAMS_CMAKEDIR}
    PATH_VARS USTREAMS_INSTALL_INCLUDEDIR)
# While the major version is 0 every minor release may change the ABI (the
# SONAME is libustreams.so.0 throughout), so a request for 0.1 accepts 0.1.x
# only; from 1.0 on, the same major version.
if(PROJECT_VERSION_MAJOR EQUAL 0)
    set(_compat SameMinorVersion)
else()
    set(_compat SameMajorVersion)
endif()
write_basic_package_version_file("${PROJECT_BINARY_DIR}/cmake/ustreamsConfigVersion.cmake"
    VERSION ${PROJECT_VERSION} COMPATIBILITY ${_compat})
install(FILES "${PROJECT_BINARY_DIR}/cmake/ustreamsConfig.cmake"
              "${PROJECT_BINARY_DIR}/cmake/ustreamsConfigVersion.cmake"
        DESTINATION ${USTREAMS_CMAKEDIR})

# test_install_consumers (tests/test_install_consumers.sh): install this
# tree to a temporary prefix, then build README.md's first program and an XTI
# program from outside the tree with pkg-config and with find_package, and
# run them; with the build's sanitizer flags.
string(JOIN " " _consumer_san ${_san})
add_test(NAME test_install_consumers
         COMMAND sh "${PROJECT_SOURCE_DIR}/tests/test_install_consumers.sh"
                 "${PROJECT_BINARY_DIR}" "${PROJECT_SOURCE_DIR}" "${CMAKE_C_COMPILER}"
                 "${_consumer_san}")
set_tests_properties(test_install_consumers PROPERTIES TIMEOUT 300 LABELS unit
    SKIP_RETURN_CODE 77 ENVIRONMENT "CMAKE=${CMAKE_COMMAND}")
