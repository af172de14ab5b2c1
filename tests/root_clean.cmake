# SPDX-License-Identifier: MIT
#
# root_clean.cmake -- ctest test_root_clean: no fuzzer artifact at the
# repository's root.
#
#   cmake -DSRC_ROOT=<source> -P root_clean.cmake
#
# libFuzzer writes crash-*, leak-*, timeout-*, oom-* and slow-unit-* into
# its working directory unless told otherwise.  `make fuzz` sends them to
# build-fuzz/artifacts/; a finding worth keeping becomes a regression seed
# under tests/fuzz/corpus/<target>/ (regress_*), never a file at the root.
# .gitignore keeps them out of commits; this test keeps them out of the tree.

if(NOT SRC_ROOT)
  message(FATAL_ERROR "root_clean.cmake: SRC_ROOT not set")
endif()
set(_bad "")
foreach(_pat crash- leak- timeout- oom- slow-unit-)
  file(GLOB _hits LIST_DIRECTORIES false "${SRC_ROOT}/${_pat}*")
  list(APPEND _bad ${_hits})
endforeach()
# The corpus keeps findings as regress_* seeds only.
file(GLOB_RECURSE _raw LIST_DIRECTORIES false
     "${SRC_ROOT}/tests/fuzz/corpus/*/crash-*"
     "${SRC_ROOT}/tests/fuzz/corpus/*/leak-*"
     "${SRC_ROOT}/tests/fuzz/corpus/*/timeout-*"
     "${SRC_ROOT}/tests/fuzz/corpus/*/oom-*")
list(APPEND _bad ${_raw})
if(_bad)
  string(REPLACE ";" "\n  " _list "${_bad}")
  message(FATAL_ERROR "fuzzer artifacts outside build-fuzz/artifacts "
          "(make each a regress_* seed in its corpus, or delete it):\n  ${_list}")
endif()
message(STATUS "root_clean: no fuzzer artifact at the root or raw in the corpus")
