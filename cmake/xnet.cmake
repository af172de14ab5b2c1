# SPDX-License-Identifier: MIT
#
# libxnet: the X/Open Transport Interface (src/xti/) as its own library,
# libxnet.so + libxnet.a (target xnet_static), linking ustreams, with the
# pkg-config module xnet (xnet.pc.in; Requires: ustreams).  Included from
# CMakeLists.txt after the library, the tests and the tools are defined:
#   tests/test_xti_*.c    -> linked with xnet_static as well (and test_tirdwr_close.c,
#                            test_poll_token.c, test_poll_token2.c)
#   test_xti_compile      -> builds tests/xti_plain_prog.c as an unmodified XTI
#                            program: -I include, <xti.h> only, linked with libxnet
#   test_xti_compile_shared -> the same, linked with the shared libxnet (--as-needed)
#   bench/xti_open.c      -> bench_xti_open, linked with xnet_static
#   bench/xti_more.c      -> bench_xti_more (T_MORE coalescing), linked with xnet_static
#   bench/xti_many.c      -> bench_xti_many (many endpoints at once), linked with xnet_static
#   bench/xti_gro.c       -> bench_xti_gro (UDP_GRO on udp's receive path), linked with xnet_static
#   tools/netperf_xti.c   -> the ustreams command is linked with xnet_static
file(GLOB XNET_SOURCES CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/xti/*.c")

add_library(xnet_obj OBJECT ${XNET_SOURCES})
set_target_properties(xnet_obj PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_compile_options(xnet_obj PRIVATE ${USTREAMS_TLS_FLAGS}) # dlopen()-able: CMakeLists.txt
# Public headers only: libxnet sits above the library's layers.
target_include_directories(xnet_obj PRIVATE "${PROJECT_SOURCE_DIR}/include" "${USTREAMS_GEN_INCLUDEDIR}")
target_link_libraries(xnet_obj PUBLIC Threads::Threads ${CMAKE_DL_LIBS})

add_library(xnet SHARED $<TARGET_OBJECTS:xnet_obj>)
target_link_options(xnet PRIVATE -Wl,-z,nodelete) # as libustreams: never unloaded
set_target_properties(xnet PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
    INSTALL_RPATH "$ORIGIN") # finds libustreams.so beside it
target_link_libraries(xnet PUBLIC ustreams)
add_library(xnet_static STATIC $<TARGET_OBJECTS:xnet_obj>)
set_target_properties(xnet_static PROPERTIES OUTPUT_NAME xnet)
target_link_libraries(xnet_static PUBLIC ustreams_static)
foreach(_lib xnet xnet_static)
    target_include_directories(${_lib} PUBLIC
        "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>"
        "$<BUILD_INTERFACE:${USTREAMS_GEN_INCLUDEDIR}>"
        "$<INSTALL_INTERFACE:${USTREAMS_INSTALL_INCLUDEDIR}>")
endforeach()

foreach(_src IN LISTS USTREAMS_TEST_SOURCES)
    get_filename_component(_name "${_src}" NAME_WE)
    if(_name MATCHES "^test_(xti_|tirdwr_close$|poll_token2?$)" AND TARGET ${_name})
        target_link_libraries(${_name} PRIVATE xnet_static)
        set_tests_properties(${_name} PROPERTIES SKIP_RETURN_CODE 77)
    endif()
endforeach()

# An unmodified XTI program: only -I include and <xti.h>, linked with libxnet.
add_executable(xti_plain_prog "${PROJECT_SOURCE_DIR}/tests/xti_plain_prog.c")
target_compile_options(xti_plain_prog PRIVATE -Wall -Wextra -Wpedantic)
set_target_properties(xti_plain_prog PROPERTIES C_EXTENSIONS OFF)
target_compile_options(xti_plain_prog PRIVATE -U_GNU_SOURCE)
target_link_libraries(xti_plain_prog PRIVATE xnet_static)
add_test(NAME test_xti_compile COMMAND xti_plain_prog)
set_tests_properties(test_xti_compile PROPERTIES TIMEOUT 60 ENVIRONMENT "USTREAMS_TEST=1" SKIP_RETURN_CODE 77
                     LABELS unit)

# The same program linked with the shared libxnet only: the C library's getmsg/putmsg
# stubs must not capture libxnet's calls, whatever the link order (src/xti/xti_msg.c).
add_executable(xti_plain_prog_shared "${PROJECT_SOURCE_DIR}/tests/xti_plain_prog.c")
target_compile_options(xti_plain_prog_shared PRIVATE -U_GNU_SOURCE)
target_link_libraries(xti_plain_prog_shared PRIVATE xnet)
target_link_options(xti_plain_prog_shared PRIVATE -Wl,--as-needed)
add_test(NAME test_xti_compile_shared COMMAND xti_plain_prog_shared)
set_tests_properties(test_xti_compile_shared PROPERTIES TIMEOUT 60 ENVIRONMENT "USTREAMS_TEST=1"
                     SKIP_RETURN_CODE 77 LABELS unit)

# The XTI echo examples (examples/xti_echo_*.c), built here as `make examples`
# builds them, for test_xti_examples, which runs them over /dev/tcp and the
# loopback transports with a deadline.
if(EXISTS "${PROJECT_SOURCE_DIR}/examples/xti_echo_server.c")
    add_executable(example_xti_echo_server "${PROJECT_SOURCE_DIR}/examples/xti_echo_server.c"
                                           "${PROJECT_SOURCE_DIR}/examples/xti_echo_client.c")
    target_compile_definitions(example_xti_echo_server PRIVATE XTI_ECHO_NO_MAIN)
    add_executable(example_xti_echo_client "${PROJECT_SOURCE_DIR}/examples/xti_echo_client.c")
    foreach(_ex example_xti_echo_server example_xti_echo_client)
        target_compile_options(${_ex} PRIVATE -Wall -Wextra)
        target_link_libraries(${_ex} PRIVATE xnet_static Threads::Threads)
    endforeach()
    if(TARGET test_xti_examples)
        target_compile_definitions(test_xti_examples PRIVATE
            XTI_ECHO_SERVER="$<TARGET_FILE:example_xti_echo_server>"
            XTI_ECHO_CLIENT="$<TARGET_FILE:example_xti_echo_client>")
        add_dependencies(test_xti_examples example_xti_echo_server example_xti_echo_client)
    endif()
endif()

# `ustreams netperf` (tools/netperf_xti.c) runs XTI over /dev/udp and /dev/tcp.
target_link_libraries(ustreams_tools_obj PRIVATE xnet_static)
foreach(_cmd IN LISTS USTREAMS_TOOL_CMDS)
    target_link_libraries(${_cmd} PRIVATE xnet_static m)
endforeach()

if(EXISTS "${PROJECT_SOURCE_DIR}/bench/xti_open.c" AND TARGET bench_xti_open)
    target_link_libraries(bench_xti_open PRIVATE xnet_static)
endif()
if(EXISTS "${PROJECT_SOURCE_DIR}/bench/xti_more.c" AND TARGET bench_xti_more)
    target_link_libraries(bench_xti_more PRIVATE xnet_static)
endif()
if(EXISTS "${PROJECT_SOURCE_DIR}/bench/xti_many.c" AND TARGET bench_xti_many)
    target_link_libraries(bench_xti_many PRIVATE xnet_static)
endif()
if(EXISTS "${PROJECT_SOURCE_DIR}/bench/xti_gro.c" AND TARGET bench_xti_gro)
    target_link_libraries(bench_xti_gro PRIVATE xnet_static)
endif()

# Installed with the library by cmake/packaging.cmake (libraries, xnet.pc,
# the ustreams::xnet target).

# test_dlopen: both shared libraries load with dlopen() in a program not
# linked with them (Python ctypes, plugins): no initial-exec TLS.
add_executable(dlopen_prog "${PROJECT_SOURCE_DIR}/tests/dlopen_prog.c")
target_link_libraries(dlopen_prog PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
add_dependencies(dlopen_prog ustreams xnet)
add_test(NAME test_dlopen COMMAND dlopen_prog $<TARGET_FILE:ustreams> $<TARGET_FILE:xnet>)
set_tests_properties(test_dlopen PROPERTIES TIMEOUT 60 LABELS unit
    ENVIRONMENT "XDG_RUNTIME_DIR=${USTREAMS_TEST_RUNDIR}")
# test_ctypes: the same from Python's ctypes (tests/preload/ctypes_echo.py).
find_program(USTREAMS_PYTHON3 python3)
if(USTREAMS_PYTHON3 AND NOT USTREAMS_SANITIZE) # python3 itself has no sanitizer runtime
    add_test(NAME test_ctypes COMMAND ${USTREAMS_PYTHON3}
        "${PROJECT_SOURCE_DIR}/tests/preload/ctypes_echo.py" $<TARGET_FILE:ustreams>
        $<TARGET_FILE:xnet> 21250 21249)
    set_tests_properties(test_ctypes PROPERTIES TIMEOUT 60 LABELS unit
        ENVIRONMENT "XDG_RUNTIME_DIR=${USTREAMS_TEST_RUNDIR}"
        PASS_REGULAR_EXPRESSION "ctypes: ok")
endif()
