#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test_man_pages (CMakeLists.txt, "ABI and man pages"; issue 25 item 2):
#   1. install the build tree to a scratch prefix (STAGE);
#   2. every symbol of the installed shared libraries' public nodes
#      (USTREAMS_0, XNET_0; nm -D --defined-only) has a page in STAGE's
#      share/man whose NAME section names it (.Nm), and no symbol outside the
#      public and private nodes is exported;
#   3. every page renders with groff -mandoc -ww (all warnings) without a
#      single diagnostic, man -l reads it (when man is installed), its .Dt
#      matches its file name, and no link dangles;
#   4. every subcommand `ustreams help` lists has a page ustreams-NAME.1;
#   5. every driver and module `ustreams scls` lists has a section 7 page
#      (NAME.7 or NAME.7D/7M/7P, a link counts), and no page of section 7
#      installed as plain NAME.7 has a name the system's own section 7 uses
#      (Linux man-pages' udp(7), tcp(7), fifo(7), pipe(7), raw(7)): ours
#      would hide it (docs/PACKAGING.md, "Reference pages").
# Usage: man_pages.sh BUILD_DIR STAGE_DIR [NM]
# Exit 0 pass, 1 fail (each failure printed), 77 skip: groff absent only.
set -u
build=$1
stage=$2
nm=${3:-nm}
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if ! command -v groff >/dev/null 2>&1; then
    echo "SKIP: groff is not installed (Debian: groff-base; .ci/run installs it)"
    exit 77
fi

rm -rf "$stage"
if ! cmake --install "$build" --prefix "$stage" >"$stage.log" 2>&1; then
    cat "$stage.log"; echo "FAIL: cmake --install"; exit 1
fi
man="$stage/share/man"
[ -d "$man" ] || { echo "FAIL: no $man"; exit 1; }

# 2. symbols -> pages.  nm -D prints "ADDR T name@@NODE" for a versioned
# definition (binutils >= 2.35); a definition without a node is reported.
nsym=0
for lib in "$stage"/lib*/libustreams.so "$stage"/lib*/libxnet.so; do
    [ -e "$lib" ] || { bad "missing $lib"; continue; }
    syms=$("$nm" -D --defined-only "$lib" | awk '$2 != "A" {print $3}') # A: the nodes
    for s in $syms; do
        name=${s%%@*}
        case "$s" in
        *@*) node=${s##*@} ;;
        *) bad "$(basename "$lib"): $name exported without a version node"; continue ;;
        esac
        case "$node" in
        USTREAMS_0|XNET_0) ;;
        USTREAMS_PRIVATE) continue ;;
        *) bad "$(basename "$lib"): $name in unknown node $node"; continue ;;
        esac
        nsym=$((nsym + 1))
        found=""
        for p in "$man"/man[1-9]/"$name".[1-9]*; do
            [ -e "$p" ] || continue
            # the page (or the one its link points to) names the symbol
            if grep -q "^\.Nm $name\( \|\$\)" "$p"; then found=$p; break; fi
        done
        [ -n "$found" ] || bad "$name ($node, $(basename "$lib")): no page names it"
    done
done
[ "$nsym" -ge 150 ] || bad "only $nsym public symbols seen (nm output format?)"
echo "symbols with a page: $nsym"

# 3. every page renders without a warning.
npages=0
for p in "$man"/man[1-9]/*; do
    [ -L "$p" ] && continue
    npages=$((npages + 1))
    # .Dt TITLE SECTION matches the file name (allocb.9f: ALLOCB 9F)
    f=$(basename "$p")
    want="$(echo "${f%.*}" | tr '[:lower:]' '[:upper:]') $(echo "${f##*.}" | tr '[:lower:]' '[:upper:]')"
    dt=$(sed -n 's/^\.Dt //p' "$p")
    [ "$dt" = "$want" ] || bad "$f: .Dt '$dt', expected '$want'"
    out=$(groff -mandoc -Tutf8 -ww -z "$p" 2>&1)
    [ -z "$out" ] || bad "$(basename "$p"): groff: $out"
    if command -v man >/dev/null 2>&1; then
        out=$(MANWIDTH=80 man -l "$p" 2>&1 >/dev/null)
        [ -z "$out" ] || bad "$(basename "$p"): man -l: $out"
    fi
done
[ "$npages" -ge 40 ] || bad "only $npages pages installed"
echo "pages rendered: $npages"
for p in "$man"/man[1-9]/*; do
    [ -L "$p" ] && { [ -e "$p" ] || bad "dangling link $p"; }
done

# 4. subcommands -> section 1 pages.
cmd="$stage/bin/ustreams"
subs=$("$cmd" help | awk '/^subcommands:/ {on = 1; next} on && NF {print $1}')
[ -n "$subs" ] || bad "ustreams help listed no subcommand"
for s in $subs; do
    [ -e "$man/man1/ustreams-$s.1" ] || bad "subcommand $s: no man1/ustreams-$s.1"
done
[ -e "$man/man1/ustreams.1" ] || bad "no man1/ustreams.1"

# 5. drivers and modules -> section 7 pages; no shadowing of the system's.
mods=$("$cmd" scls)
[ -n "$mods" ] || bad "ustreams scls listed nothing"
nmods=0
for m in $mods; do
    nmods=$((nmods + 1))
    found=""
    for p in "$man/man7/$m.7" "$man/man7/$m.7d" "$man/man7/$m.7m" "$man/man7/$m.7p"; do
        [ -e "$p" ] && found=$p
    done
    [ -n "$found" ] || bad "driver or module $m (scls): no man7/$m.7, .7d, .7m or .7p"
done
echo "drivers and modules with a section 7 page: $nmods"
sysman7=/usr/share/man/man7
if [ -d "$sysman7" ]; then
    for p in "$man"/man7/*.7; do
        [ -e "$p" ] || [ -L "$p" ] || continue
        n=$(basename "$p" .7)
        for s in "$sysman7/$n.7" "$sysman7/$n.7.gz" "$sysman7/$n.7.xz" "$sysman7/$n.7.bz2"; do
            [ -e "$s" ] && bad "man7/$n.7 would hide the system's $s: give it a suffix (7D, 7M, 7P)"
        done
    done
fi
# The names known to clash stay clear even where the system has no pages.
for n in udp tcp raw fifo pipe; do
    [ -e "$man/man7/$n.7" ] && bad "man7/$n.7 clashes with Linux man-pages' $n(7)"
done

[ "$fail" -eq 0 ] && echo "man pages: ok"
exit "$fail"
