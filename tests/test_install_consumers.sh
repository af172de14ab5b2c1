#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test_install_consumers.sh -- a program builds against an installed ustreams
# by both documented routes, from outside the source tree (docs/PACKAGING.md).
#   usage: test_install_consumers.sh BUILD_DIR SOURCE_DIR CC "SANITIZER FLAGS"
#   1. `cmake --install BUILD_DIR --prefix TMP`; the headers are under
#      TMP/include/ustreams only (none straight in TMP/include, so none can
#      shadow the system's), with ustreams_version.h saying the version
#      `ustreams --version` prints.
#   2. pkg-config: README.md's "Quick start" program (its first ```c block),
#      compiled as the README says with `pkg-config --cflags --libs ustreams`
#      and an rpath, prints "hdr hello"; an XTI program with `xnet` opens,
#      binds and closes a /dev/ticotsord endpoint.
#   3. CMake: a project with find_package(ustreams 0.1 CONFIG REQUIRED) links
#      ustreams::ustreams and ustreams::xnet; its program checks
#      USTREAMS_VERSION against the package's ustreams_VERSION and runs both.
# Every step has a deadline (timeout); exit 0 = passed, 77 = skipped (no
# pkg-config or cmake), else failed with the step named on stderr.
set -u
BUILD=$1 SRC=$2 CC=$3 SAN=${4-}
T=$(mktemp -d /tmp/ust_installXXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "test_install_consumers: FAIL: $*" >&2; exit 1; }
run() { timeout 120 "$@"; }
command -v pkg-config >/dev/null 2>&1 || { echo "no pkg-config: skipped"; exit 77; }
CMAKE=${CMAKE:-cmake}
command -v "$CMAKE" >/dev/null 2>&1 || { echo "no cmake: skipped"; exit 77; }
P=$T/prefix
export XDG_RUNTIME_DIR=$T USTREAMS_PUBLISH=0

# 1. install
run "$CMAKE" --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "cmake --install"; }
for h in ustreams.h ustreams_version.h stropts.h xti.h sys/stream.h sys/ddi.h; do
    [ -f "$P/include/ustreams/$h" ] || fail "$h not in PREFIX/include/ustreams"
done
stray=$(find "$P/include" -maxdepth 1 -mindepth 1 ! -name ustreams)
[ -z "$stray" ] || fail "headers straight in PREFIX/include: $stray"
ver=$(sed -n 's/^#define USTREAMS_VERSION "\(.*\)"$/\1/p' "$P/include/ustreams/ustreams_version.h")
[ -n "$ver" ] || fail "no USTREAMS_VERSION in ustreams_version.h"
got=$("$P/bin/ustreams" --version) || fail "ustreams --version exit status"
[ "$got" = "ustreams $ver" ] || fail "ustreams --version says '$got', header '$ver'"
echo "installed $ver in $P"

# 2. pkg-config, from a directory outside the tree
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
mkdir -p "$T/pc" && cd "$T/pc" || fail "cd"
awk '/^## Quick start/ {q = 1} q && /^```c$/ {c = 1; next} c && /^```$/ {exit} c' \
    "$SRC/README.md" >first.c
[ -s first.c ] || fail "README.md has no \"## Quick start\" C program"
# shellcheck disable=SC2046,SC2086
run $CC -std=c11 -Wall -Werror $SAN first.c $(pkg-config --cflags --libs ustreams) \
    -Wl,-rpath,"$P/lib" -o first || fail "README's first program with pkg-config ustreams"
out=$(run ./first) || fail "README's first program exit status"
[ "$out" = "hdr hello" ] || fail "README's first program printed '$out', not 'hdr hello'"
cat >xti.c <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <xti.h>
int main(void)
{
    int fd = t_open("/dev/ticotsord", O_RDWR, NULL);
    if (fd < 0 || t_bind(fd, NULL, NULL) < 0) {
        t_error("t_open/t_bind");
        return 1;
    }
    puts("xti ok");
    return t_close(fd);
}
C
# shellcheck disable=SC2046,SC2086
run $CC -std=c11 -Wall -Werror $SAN xti.c $(pkg-config --cflags --libs xnet) \
    -Wl,-rpath,"$P/lib" -o xti || fail "XTI program with pkg-config xnet"
[ "$(run ./xti)" = "xti ok" ] || fail "XTI program (pkg-config) did not print 'xti ok'"
echo "pkg-config: ok"

# 3. CMake find_package
mkdir -p "$T/cm" && cd "$T/cm" || fail "cd"
cp "$T/pc/first.c" "$T/pc/xti.c" .
cat >version.c <<'C'
#include <stdio.h>
#include <string.h>
#include <ustreams.h>
int main(void)
{
    if (strcmp(USTREAMS_VERSION, PKG_VERSION) != 0 ||
        USTREAMS_VERSION_NUMBER != USTREAMS_VERSION_MAJOR * 10000 + USTREAMS_VERSION_MINOR * 100 +
                                       USTREAMS_VERSION_PATCH) {
        printf("header %s, package %s\n", USTREAMS_VERSION, PKG_VERSION);
        return 1;
    }
    puts("version ok");
    return 0;
}
C
cat >CMakeLists.txt <<'C'
cmake_minimum_required(VERSION 3.16)
project(consumer LANGUAGES C)
find_package(ustreams 0.1 CONFIG REQUIRED)
add_executable(first first.c)
target_link_libraries(first PRIVATE ustreams::ustreams)
add_executable(xti xti.c)
target_link_libraries(xti PRIVATE ustreams::xnet)
add_executable(version version.c)
target_compile_definitions(version PRIVATE PKG_VERSION="${ustreams_VERSION}")
target_link_libraries(version PRIVATE ustreams::ustreams)
C
run "$CMAKE" -S . -B b -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC" \
    -DCMAKE_C_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="$SAN" >cfg.log 2>&1 ||
    { cat cfg.log; fail "find_package(ustreams CONFIG)"; }
run "$CMAKE" --build b >build.log 2>&1 || { cat build.log; fail "building with ustreams:: targets"; }
[ "$(run b/first)" = "hdr hello" ] || fail "CMake-built first program"
[ "$(run b/xti)" = "xti ok" ] || fail "CMake-built XTI program (ustreams::xnet)"
[ "$(run b/version)" = "version ok" ] || fail "USTREAMS_VERSION against the package's version"
echo "cmake: ok"
echo "test_install_consumers: ok"
