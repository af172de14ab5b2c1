#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cross-process pipe sweep: `ustreams perftest --procs` (the reader of the pair
a child process, the writer the parent) over write sizes, for a ustreams pipe,
pipe(2) and AF_UNIX stream and seqpacket socketpairs, with ratios to pipe(2)
between processes in the same run.  Part of `make bench`, after bench/sweep.py.

    bench/procs_sweep.py [--perftest 'build/ustreams perftest'] [--repeat N]
                         [--time SECONDS] [--quick] [--no-syscalls] [--out bench/out]
                         [--date D]

Sizes 1 B to 64 KiB (--quick or QUICK=1: to 4 KiB), each point --repeat times
(default 3) for --time seconds (default 0.2) after 0.05 s of warm-up, the runs
interleaved (repetition, size, series) as bench/sweep.py does; the median is
kept.  About 45 s on 2 cores without the ustreams series, 60 s with it.
Then, when `perf stat` can count (bench/perfstat.py), every series at 1, 64,
4096 and 65536 B under perf, a run of --time and one of 0.01 s: system calls,
CPU time (and instructions and cycles where the PMU offers them) per message,
parent and forked reader together (bench/sweep_costs.py); about 25 s more.

The ustreams series is "n/a" when perftest says a ustreams pipe does not cross
fork() in this build (exit status 3): the report says so, nothing fails.
Output, in bench/out/<date>/: procs_raw.csv (every run), procs_medians.csv,
procs_throughput.png (bytes/s against size, log-log), procs_costs.png (system
calls and CPU time per message against size) and procs.md (the tables and the
targets); the same section replaces any earlier one in that day's
results.md and in bench/out/latest.md, and bench/out/latest-procs.md
with latest/procs_throughput.png are the newest at stable paths.  The exit
status is 0 unless perftest could not be run at all.
"""

import argparse
import datetime
import os
import shlex
import shutil
import subprocess
import sys
import time

import perfstat
import sweep
import sweep_charts
import sweep_costs

UST = "ustreams"
PIPE = "pipe(2)"
NOTAVAIL = 3  # perftest's exit status: ustreams pipes do not cross fork()
# label -> perftest arguments (with --procs); ustreams with read/write (-r) and
# default stream-head options, like the peers.
SERIES = [
    (UST, ["-r"]),
    (PIPE, ["--peer", "pipe"]),
    ("AF_UNIX stream", ["--peer", "unix-stream"]),
    ("AF_UNIX seqpacket", ["--peer", "unix-seqpacket"]),
]
MARKERS = {UST: "o", PIPE: "^", "AF_UNIX stream": "D", "AF_UNIX seqpacket": "x"}
COLORS = {UST: "C0", PIPE: "C2", "AF_UNIX stream": "C4", "AF_UNIX seqpacket": "C5"}
# Issue 13's targets between processes: (sizes, at least this × pipe(2)).
TARGETS = [("writes ≤ 128 B", lambda s: s <= 128, 3),
           ("4 KiB", lambda s: s == 4096, 1),
           ("64 KiB", lambda s: s == 65536, 1)]
BEGIN = "<!-- procs_sweep: begin -->"
END = "<!-- procs_sweep: end -->"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_args():
    quick = os.environ.get("QUICK", "") not in ("", "0", "no", "false")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--perftest", default="build/ustreams perftest")
    ap.add_argument("--repeat", type=int, default=int(os.environ.get("REPEAT", "3")))
    ap.add_argument("--time", type=float, default=0.2, help="seconds per run (perftest -t)")
    ap.add_argument("--warmup", type=float, default=0.05)
    ap.add_argument("--quick", action="store_true", default=quick, help="sizes up to 4 KiB")
    ap.add_argument("--no-syscalls", action="store_true",
                    help="skip the counts per message (perf stat)")
    ap.add_argument("--out", default="bench/out")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    return ap.parse_args()


def probe_ustreams(a):
    """(usable, why not) for `perftest --procs -r`."""
    cmd = shlex.split(a.perftest) + ["--procs", "--csv", "-q", "-t", "0.05", "-r"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False, "perftest --procs hung (no result in 60 s)"
    if p.returncode == 0 and p.stdout.strip():
        return True, ""
    lines = p.stderr.strip().splitlines() or ["no output"]
    why = next((ln for ln in lines if ln.startswith("perftest:")), lines[-1])
    if p.returncode == NOTAVAIL:
        return False, f"n/a (exit {NOTAVAIL}): {why.removeprefix('perftest: ')}"
    return False, f"failed (exit {p.returncode}): {why}"


def measure(a, runner, sizes, series, started, perf):
    """Run the plan: each repetition the sweep, then (perf: the command
    prefix, or None) the pairs of runs under perf at sweep_costs.SIZES.
    Returns {(group, label, size): [row or None per run]}, group "procs"
    (the sweep), "perf" or "perf-base"."""
    plan = []
    for rep in range(a.repeat):
        plan += [("procs", lb, s, rep, args) for s in sizes for lb, args in series]
        if perf:
            for s in sweep_costs.within(sizes):
                for lb, args in series:
                    plan += [("perf", lb, s, rep, args), ("perf-base", lb, s, rep, args)]
    per_run = a.time + a.warmup + 0.05
    log(f"procs sweep: {len(plan)} runs of ~{per_run:.2f} s (~{len(plan) * per_run:.0f} s)")
    results = {}
    for i, (group, lb, s, rep, args) in enumerate(plan, 1):
        if runner.hung >= 3 and "--peer" not in args:
            results.setdefault((group, lb, s), []).append(None)
            continue
        if group == "perf":
            r = runner.run(group, lb, s, rep, ["--procs"] + args, wrap=perf)
        elif group == "perf-base":
            r = runner.run(group, lb, s, rep, ["--procs"] + args, wrap=perf,
                           ttime=sweep_costs.BASE_TIME, warmup=0)
        else:
            r = runner.run(group, lb, s, rep, ["--procs"] + args)
        results.setdefault((group, lb, s), []).append(r)
        if i % 20 == 0 or i == len(plan) or r is None:
            got = f"{r['bytes_per_s']:.3g} B/s" if r else f"no result (rc {runner.raw[-1]['rc']})"
            log(f"[{i:4d}/{len(plan)}] {time.monotonic() - started:4.0f} s  "
                f"{lb:18s} {s:6d} B rep {rep}: {got}")
    return results


def medians(results):
    med, rows = {}, []
    for (group, lb, s), runs in results.items():
        if group != "procs":
            continue
        good = [r for r in runs if r is not None]
        if not good:
            continue
        m = {k: sweep.median_of(good, k) for k in ("writes_per_s", "reads_per_s", "bytes_per_s")}
        m.update(series=lb, size=s, n=len(good))
        med[(lb, s)] = m
        rows.append(m)
    return med, rows


def chart(med, labels, sizes, outdir):
    plt = sweep_charts.pyplot("procs sweep")
    if plt is None:
        return []
    fig, ax = plt.subplots(figsize=(8, 5))
    for lb in labels:
        pts = [(s, med[(lb, s)]["bytes_per_s"]) for s in sizes
               if med.get((lb, s)) and med[(lb, s)]["bytes_per_s"]]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=MARKERS.get(lb, "."),
                    color=COLORS.get(lb), label=lb)
    sweep_charts.size_axis(ax, sizes)
    ax.set_yscale("log")
    ax.set_ylabel("bytes per second")
    ax.set_title("Between processes: bytes/s against write size (perftest --procs)")
    ax.legend(fontsize=8)
    made = []
    sweep_charts.save(plt, fig, outdir, "procs_throughput.png", made)
    return made


def section(ctx, img_prefix):
    med, sizes, labels = ctx["med"], ctx["sizes"], ctx["labels"]
    L = [BEGIN, f"## Between processes (`perftest --procs`), {ctx['date']}", ""]
    add = L.append
    add(f"The writer is the parent, the reader a child process (fork after the pair is made; "
        f"each closes the end it does not use).  `perftest --procs -t {ctx['time']} -i 1 "
        f"--warmup {ctx['warmup']}`, {ctx['repeat']} runs per point, median kept; sizes "
        f"{sizes[0]}..{sizes[-1]} B; {ctx['elapsed']:.0f} s.  ustreams: `-r` (read/write, "
        "default options).")
    add("")
    if not ctx["ust_ok"]:
        add(f"- **ustreams was not measured between processes**: {ctx['ust_error']}")
        add("")
    if ctx["chart"]:
        add(f"![Throughput between processes]({img_prefix}procs_throughput.png)")
        add("")
    others = [lb for lb in labels if lb != PIPE]
    add("| size | pipe(2) bytes/s | " + " | ".join(others) + " |")
    add("|---:|---:|" + "---:|" * len(others))
    for s in sizes:
        base = med.get((PIPE, s))
        cells = [sweep.fmt_x(sweep.ratio(med, lb, PIPE, s)) for lb in others]
        add(f"| {s} | {sweep.fmt_rate(base['bytes_per_s']) if base else 'n/a'} | "
            + " | ".join(cells) + " |")
    add("")
    add("Targets (issue 13), ustreams against pipe(2) between processes, bytes/s:")
    add("")
    add("| target | measured | verdict |")
    add("|---|---|---|")
    for name, pick, need in TARGETS:
        pts = [s for s in sizes if pick(s)]
        rs = [(sweep.ratio(med, UST, PIPE, s), s) for s in pts]
        rs = [r for r in rs if r[0] is not None]
        if not pts:
            add(f"| {name}: ≥ {need}× | not measured (sizes stop at {sizes[-1]} B) | n/a |")
        elif not rs:
            add(f"| {name}: ≥ {need}× | n/a | n/a |")
        else:
            r, s = min(rs)
            add(f"| {name}: ≥ {need}× | {r:.2f}× (smallest, at {s} B) | "
                f"{'met' if r >= need else 'not met'} |")
    add("")
    if ctx["failures"]:
        add("Failed runs: " + "; ".join(f"{w}: `{m}`" for w, m in ctx["failures"][:10])
            + (f"; and {len(ctx['failures']) - 10} more" if len(ctx["failures"]) > 10 else ""))
        add("")
    L.extend(sweep_costs.section(
        ctx["costs"], labels, ctx["csizes"], ctx["perf_error"], ctx["hw_note"],
        "Between processes, per message, per size (perf stat)",
        img_prefix + "procs_costs.png" if ctx["costs_chart"] else None))
    add(f"Raw data: `{ctx['rawname']}`, `{ctx['medname']}`.")
    add(END)
    return "\n".join(L) + "\n"


def splice(path, text):
    """Replace the procs section of the report at path (or append it); no file, nothing."""
    if not os.path.exists(path):
        return
    with open(path) as f:
        old = f.read()
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        old = head + rest.split(END, 1)[1].lstrip("\n")
    with open(path, "w") as f:
        f.write(old.rstrip("\n") + "\n\n" + text)


def main():
    a = parse_args()
    started = time.monotonic()
    prog = (shlex.split(a.perftest) or [""])[0]
    if not (os.path.isfile(prog) and os.access(prog, os.X_OK)):
        log(f"procs sweep: {prog} not found: build it first (make)")
        return 2
    top = 4096 if a.quick else 65536
    sizes = [1 << i for i in range(top.bit_length())]
    ust_ok, ust_error = probe_ustreams(a)
    if not ust_ok:
        log(f"procs sweep: ustreams not measured: {ust_error}; measuring the peers only")
    series = [(lb, args) for lb, args in SERIES if ust_ok or lb != UST]
    labels = [lb for lb, _ in SERIES]  # ustreams stays as an n/a column
    pr = perfstat.Probe(None, (), "skipped (--no-syscalls)", None) if a.no_syscalls \
        else perfstat.probe()
    if pr.cmd is None:
        log(f"procs sweep: no counts per message: {pr.error}")
    runner = sweep.Runner(a.perftest, a.time, a.warmup)
    results = measure(a, runner, sizes, series, started, pr.cmd)
    med, rows = medians(results)

    outdir = os.path.join(a.out, a.date)
    os.makedirs(outdir, exist_ok=True)
    sweep.write_csv(os.path.join(outdir, "procs_raw.csv"), runner.raw, sweep.RAW_FIELDS)
    sweep.write_csv(os.path.join(outdir, "procs_medians.csv"), rows,
                    ["series", "size", "writes_per_s", "reads_per_s", "bytes_per_s", "n"])
    made = chart(med, [lb for lb, _ in series], sizes, outdir)
    csizes = sweep_costs.within(sizes)
    costs = sweep_costs.collect(results, [lb for lb, _ in series], csizes, "perf", "perf-base")
    costs_made = [] if pr.cmd is None else sweep_costs.chart(
        costs, [lb for lb, _ in series], csizes, outdir, "procs_costs.png",
        "Between processes, per message, by perf stat (marginal; log scales)", MARKERS, COLORS)
    made += costs_made
    ctx = {"date": a.date, "med": med, "sizes": sizes, "labels": labels, "ust_ok": ust_ok,
           "ust_error": ust_error, "time": a.time, "warmup": a.warmup, "repeat": a.repeat,
           "elapsed": time.monotonic() - started, "chart": bool(made),
           "failures": runner.failures, "rawname": "procs_raw.csv",
           "medname": "procs_medians.csv", "costs": costs, "csizes": csizes,
           "perf_error": pr.error, "hw_note": pr.hw_note, "costs_chart": bool(costs_made)}
    here = section(ctx, "")
    with open(os.path.join(outdir, "procs.md"), "w") as f:
        f.write(f"# ustreams pipe benchmark between processes, {a.date}\n\n" + here)
    splice(os.path.join(outdir, "results.md"), here)

    latest = os.path.join(a.out, "latest")
    os.makedirs(latest, exist_ok=True)
    for p in made:
        shutil.copy(p, latest)
    ctx.update(rawname=f"{a.date}/procs_raw.csv", medname=f"{a.date}/procs_medians.csv")
    stable = section(ctx, "latest/")
    with open(os.path.join(a.out, "latest-procs.md"), "w") as f:
        f.write(f"# ustreams pipe benchmark between processes, {a.date}\n\n" + stable)
    splice(os.path.join(a.out, "latest.md"), stable)
    log(f"procs sweep: done in {ctx['elapsed']:.0f} s: {outdir}/procs.md "
        f"({len(runner.failures)} failed runs)")
    print(here)
    return 0


if __name__ == "__main__":
    sys.exit(main())
