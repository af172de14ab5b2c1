# SPDX-License-Identifier: MIT
#
# layering.cmake -- ctest test_layering: the library's arrows point down.
#
#   cmake -DSRC_DIR=<source>/src -DOBJ_LIST=<file> -DNM=<nm> -P layering.cmake
#
# The layers of src/ (docs/ARCHITECTURE.md "Layers", DESIGN.md "Layers") and
# what each may use besides itself:
#
#   core     (the executive)   nothing
#   head     (stream head)     core
#   procs    (across processes) core, head (the head reaches it only through
#                              the hooks it installs: src/head/sd_procs.h)
#   drivers                    core, head
#   modules                    core, head
#   admin    (administration)  core, head, procs, drivers, modules
#   xti      (libxnet)         core, head, drivers, modules, admin (in fact
#                              only the public API: ustreams.h, stropts.h,
#                              xti.h, sys/tihdr.h, sys/timod.h)
#
# Drivers and modules sit side by side, one file each: neither uses the
# other, nor admin.  Where a lower layer must reach up it calls a hook that
# the upper layer installs at start-up (src/admin/start.c), which neither
# check below sees as a dependency, rightly.  A directory of src/ not in the
# table (a later layer) is not checked, and nothing in the table may use it.
#
# Two checks, because a dependency need not be an include (builtins.c once
# called up with prototypes declared in a core header):
#   1. includes: every #include of src/<layer>/*.[ch] that names a header of
#      src/ (found beside the file, under src/, or in any layer directory,
#      which covers every private include path) names one of an allowed
#      layer;
#   2. symbols: every undefined symbol of an object of the library (the list
#      in OBJ_LIST, one path per line) that another object defines is
#      defined in an allowed layer (nm).
# Either failing prints each offending line and fails the test.

cmake_minimum_required(VERSION 3.25)

foreach(_v SRC_DIR OBJ_LIST NM)
    if(NOT DEFINED ${_v} OR "${${_v}}" STREQUAL "")
        message(FATAL_ERROR "layering: -D${_v}=... is required")
    endif()
endforeach()

set(LAYERS core head procs drivers modules admin xti)
set(ALLOW_core "")
set(ALLOW_head core)
set(ALLOW_procs core head)
set(ALLOW_drivers core head)
set(ALLOW_modules core head)
set(ALLOW_admin core head procs drivers modules)
set(ALLOW_xti core head procs drivers modules admin)

get_filename_component(SRC_DIR "${SRC_DIR}" ABSOLUTE)
set(_bad "")

# The layer of a path under SRC_DIR (its first directory), or "" if none.
function(layer_of path out)
    set(_l "")
    string(LENGTH "${SRC_DIR}/" _n)
    string(FIND "${path}" "${SRC_DIR}/" _at)
    if(_at EQUAL 0)
        string(SUBSTRING "${path}" ${_n} -1 _rel)
        if(_rel MATCHES "^([^/]+)/")
            set(_l "${CMAKE_MATCH_1}")
        endif()
    endif()
    set(${out} "${_l}" PARENT_SCOPE)
endfunction()

# May layer `user` use layer `used`?
function(allowed user used out)
    set(_ok 0)
    if(used STREQUAL user)
        set(_ok 1)
    else()
        list(FIND ALLOW_${user} "${used}" _i)
        if(_i GREATER -1)
            set(_ok 1)
        endif()
    endif()
    set(${out} ${_ok} PARENT_SCOPE)
endfunction()

# ---------------------------------------------------------------- 1. includes
set(_nfiles 0)
foreach(_layer IN LISTS LAYERS)
    file(GLOB_RECURSE _files "${SRC_DIR}/${_layer}/*.c" "${SRC_DIR}/${_layer}/*.h")
    foreach(_f IN LISTS _files)
        math(EXPR _nfiles "${_nfiles} + 1")
        get_filename_component(_dir "${_f}" DIRECTORY)
        file(STRINGS "${_f}" _incs REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"][^>\"]+[>\"]")
        foreach(_line IN LISTS _incs)
            string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" _name "${_line}")
            set(_cands "${_dir}/${_name}" "${SRC_DIR}/${_name}")
            foreach(_l IN LISTS LAYERS)
                list(APPEND _cands "${SRC_DIR}/${_l}/${_name}")
            endforeach()
            set(_seen "")
            foreach(_c IN LISTS _cands)
                get_filename_component(_c "${_c}" ABSOLUTE)
                if(NOT EXISTS "${_c}" OR IS_DIRECTORY "${_c}")
                    continue()
                endif()
                layer_of("${_c}" _used)
                if(_used STREQUAL "" OR "${_used}" IN_LIST _seen)
                    continue()
                endif()
                list(APPEND _seen "${_used}")
                allowed(${_layer} "${_used}" _ok)
                if(NOT _ok)
                    file(RELATIVE_PATH _rf "${SRC_DIR}/.." "${_f}")
                    list(APPEND _bad "include: ${_rf}: ${_line}  (${_layer} -> ${_used})")
                endif()
            endforeach()
        endforeach()
    endforeach()
endforeach()

# ---------------------------------------------------------------- 2. symbols
file(STRINGS "${OBJ_LIST}" _objs)
set(_nobj_core 0)
# The symbol names nm lists for object `obj` with the given options.
function(nm_symbols obj out)
    execute_process(COMMAND "${NM}" ${ARGN} "${obj}" OUTPUT_VARIABLE _out RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "layering: ${NM} ${ARGN} failed on ${obj}")
    endif()
    string(REGEX MATCHALL "[^\n]+" _lines "${_out}")
    set(_names "")
    foreach(_s IN LISTS _lines)
        string(REGEX REPLACE ".* " "" _s "${_s}")
        list(APPEND _names "${_s}")
    endforeach()
    set(${out} "${_names}" PARENT_SCOPE)
endfunction()

foreach(_o IN LISTS _objs)
    if(_o MATCHES "/src/([^/]+)/[^/]+$")
        set(_l "${CMAKE_MATCH_1}")
    else()
        continue()
    endif()
    if(_l STREQUAL "core")
        math(EXPR _nobj_core "${_nobj_core} + 1")
    endif()
    nm_symbols("${_o}" _syms -g --defined-only)
    foreach(_s IN LISTS _syms)
        set("DEF_${_s}" "${_l}")
    endforeach()
    set("LAYER_${_o}" "${_l}")
endforeach()

foreach(_o IN LISTS _objs)
    set(_l "${LAYER_${_o}}")
    if(NOT "${_l}" IN_LIST LAYERS)
        continue()
    endif()
    nm_symbols("${_o}" _syms -u)
    foreach(_s IN LISTS _syms)
        set(_used "${DEF_${_s}}")
        if(_used STREQUAL "")
            continue()
        endif()
        allowed(${_l} "${_used}" _ok)
        if(NOT _ok)
            string(REGEX REPLACE ".*/(src/[^/]+/[^/]+)$" "\\1" _ro "${_o}")
            list(APPEND _bad "symbol: ${_ro} uses ${_s}  (${_l} -> ${_used})")
        endif()
    endforeach()
endforeach()

# A check that saw nothing proves nothing.
if(_nfiles EQUAL 0 OR _nobj_core EQUAL 0)
    message(FATAL_ERROR "layering: nothing to check (${_nfiles} sources, "
                        "${_nobj_core} core objects): wrong SRC_DIR or OBJ_LIST?")
endif()

if(_bad)
    list(LENGTH _bad _n)
    string(REPLACE ";" "\n  " _msg "${_bad}")
    message(FATAL_ERROR "layering: ${_n} dependencies point up or sideways "
                        "(see tests/layering.cmake for the rule):\n  ${_msg}")
endif()
list(LENGTH _objs _nobj)
message(STATUS "layering: ${_nfiles} sources and ${_nobj} objects, every arrow points down")
