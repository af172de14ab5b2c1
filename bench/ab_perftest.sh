#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ab_perftest.sh -- two builds of `ustreams` side by side, interleaved, with
# pipe(2) in the same rounds: the before/after of a change.
#
#   bench/ab_perftest.sh BEFORE AFTER [ROUNDS] [SECONDS]
#
# BEFORE and AFTER are `ustreams` binaries (e.g. a worktree of the old commit
# built with `cmake -B build && ninja -C build ustreams`, and build/ustreams).
# Each round runs, for threads and for processes (--procs) and for writes of
# 1, 64 and 4096 bytes: BEFORE perftest -r, AFTER perftest -r, and pipe(2)
# (perftest --peer pipe of AFTER), each for SECONDS (default 1).  Prints one
# table row per case: the medians of writes/s, each build's median ratio to
# pipe(2) in its rounds, and the median of AFTER/BEFORE per round.
#
# AB_CASES replaces that matrix with perftest argument sets of your own,
# separated by ';' (e.g. AB_CASES="-s 64 -p 1 -m nullmod;-s 65536"); each
# runs as threads (add --procs inside a case for processes).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BEFORE AFTER [ROUNDS] [SECONDS]" >&2; exit 2; }
before=$1 after=$2 rounds=${3:-5} secs=${4:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The perftest command of one side of a round: cmd=(...).
set_cmd() {
    case $1 in
    before) cmd=("$before" perftest -r) ;;
    after) cmd=("$after" perftest -r) ;;
    pipe) cmd=("$after" perftest --peer pipe) ;;
    esac
}

if [ -n "${AB_CASES:-}" ]; then
    IFS=';' read -r -a cases <<<"$AB_CASES"
    for ((r = 1; r <= rounds; r++)); do
        for c in "${cases[@]}"; do
            for which in before after pipe; do
                set_cmd "$which"
                args=$c
                # pipe(2) has no modules to push: its size and mode only
                [ "$which" = pipe ] && args=$(sed -E 's/-(p|m) +[^ ]+//g' <<<"$c")
                # shellcheck disable=SC2086 # a case is a list of arguments
                w=$("${cmd[@]}" --csv -q -t "$secs" $args 2>/dev/null | head -1 | cut -d, -f3 || true)
                echo "$r,case,$c,$which,${w:-0}" >>"$out"
            done
        done
    done
else
    for ((r = 1; r <= rounds; r++)); do
        for mode in threads procs; do
            flag=""
            [ "$mode" = procs ] && flag="--procs"
            for size in 1 64 4096; do
                for which in before after pipe; do
                    set_cmd "$which"
                    w=$("${cmd[@]}" --csv -q -t "$secs" -s "$size" $flag 2>/dev/null | head -1 | cut -d, -f3)
                    echo "$r,$mode,$size,$which,${w:-0}" >>"$out"
                done
            done
        done
    done
fi
python3 - "$out" <<'PY'
import collections, csv, statistics, sys
d = collections.defaultdict(list)
order = []
for r, mode, size, which, w in csv.reader(open(sys.argv[1])):
    if (mode, size) not in order:
        order.append((mode, size))
    d[(mode, size, which)].append(float(w))
print("| mode | case | before w/s | after w/s | pipe(2) w/s | before ÷ pipe | after ÷ pipe | after ÷ before |")
print("|---|---|---|---|---|---|---|---|")
med = statistics.median
ratio = lambda x, y: med([u / v for u, v in zip(x, y) if v > 0] or [0])
for mode, size in order:
    b, a, p = (d[(mode, size, k)] for k in ("before", "after", "pipe"))
    label = f"{size} B" if mode != "case" else size
    print(f"| {mode} | {label} | {med(b)/1e3:.0f} k | {med(a)/1e3:.0f} k | {med(p)/1e3:.0f} k "
          f"| {ratio(b, p):.2f}× | {ratio(a, p):.2f}× | {ratio(a, b):.2f} |")
PY
