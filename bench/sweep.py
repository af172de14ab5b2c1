#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Pipe benchmark sweep: `build/ustreams perftest` over write sizes, side by side with
pipe(2), AF_UNIX socketpairs and ZeroMQ inproc PAIR sockets, and the four charts of
the OpenSS7 pipe paper.

    bench/sweep.py [--perftest 'build/ustreams perftest'] [--micro-csv FILE] [--repeat N]
                   [--time SECONDS] [--quick] [--peers-only] [--no-extras] [--no-syscalls]
                   [--out bench/out] [--date YYYY-MM-DD] [--from-raw RAW_CSV]

Sizes 1 B to 64 KiB; --quick (or QUICK=1) stops at 4 KiB.  REPEAT=N is
--repeat N.  --full and FULL=1 are accepted and change nothing (64 KiB is the
default).  The ZeroMQ series runs when perftest was built with libzmq; per
message at 1, 64, 4096 and 65536 B the system calls, the CPU time and (where
the PMU offers them) instructions and cycles, when `perf stat` can count them
(bench/sweep_costs.py, bench/perfstat.py).

Every point is run REPEAT times (default 3) and the median kept.  Runs are
interleaved (repetition, then size, then series) so that drift of a shared
machine spreads over every series alike.  Output, in bench/out/<date>/:
    raw.csv          every run
    medians.csv      the medians the charts and tables use
    performance.png  writes/s against log2 size
    delay.png        seconds per write against size, with the least-squares
                     line; intercept (per-write overhead) and slope (per-byte
                     cost) in the legend
    throughput.png   log bytes/s against log size
    improvement.png  % of writes/s over pipe(2)
    costs.png        system calls and CPU time per message against size (perf)
    push.png         the nullmod sweep: % of bytes/s lost against none
    results.md       ratios, delay fit, targets, per message per size, extra tables
and the same report as bench/out/latest.md with bench/out/latest/*.png.
--from-raw redoes the medians, charts and reports from an earlier raw.csv
without measuring.  Timings are a report, never a test: the exit status is 0
unless perftest could not be run at all.
"""

import argparse
import csv
import datetime
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

import sweep_charts
import perfstat
import sweep_costs

PIPE = "pipe(2)"
UST = "ustreams"
UST_TUNED = "ustreams -H -M -w -F"
ZMQ = "ZeroMQ inproc PAIR"
ZMQ_PEER = "zmq-inproc"

# label -> perftest arguments.  ustreams uses read/write (-r) like the peers and
# like the paper's perftest_script; putmsg/getmsg appears in the options table.
SERIES = [
    (UST, ["-r"]),
    (UST_TUNED, ["-r", "-H", "-M", "-w", "-F"]),
    (PIPE, ["--peer", "pipe"]),
    ("pipe(2) -F", ["--peer", "pipe", "-F"]),
    ("AF_UNIX stream", ["--peer", "unix-stream"]),
    ("AF_UNIX seqpacket", ["--peer", "unix-seqpacket"]),
    (ZMQ, ["--peer", ZMQ_PEER]),
]

# Options at 64 B: which stream-head feature buys what.
OPTION_SERIES = [
    ("-r (read/write)", ["-r"]),
    ("putmsg/getmsg", []),
    ("-r -H (hold)", ["-r", "-H"]),
    ("-r -M (M_READ)", ["-r", "-M"]),
    ("-r -w (read-fill)", ["-r", "-w"]),
    ("-r -F (full reads)", ["-r", "-F"]),
    ("-r --no-cache (no block caches)", ["-r", "--no-cache"]),
    ("-r -H -w -F", ["-r", "-H", "-w", "-F"]),
    ("-r -H -M -w -F", ["-r", "-H", "-M", "-w", "-F"]),
]
PUSH_COUNTS = [0, 1, 4, 8]
PUSH_TARGET_LOSS = 30  # % lost by 8 nullmods against none (issue 24 item 2)
# The delay line is fitted (and drawn) over sizes up to this, as in the paper:
# past a few KiB the kernel's costs stop being linear (cache sizes, pipe
# buffer pages) and the largest points would decide the intercept alone.
FIT_MAX = 4096
EXTRA_SIZE = 64
# Under perf stat (bench/sweep_costs.py): these series at every size of
# sweep_costs.SIZES the sweep has, the others at EXTRA_SIZE only.  Every series
# today: the three sizes more cost about 40 s of make bench (bench/README.md,
# "What make bench reports per size"); narrow it here if that grows.
COST_SERIES = tuple(lb for lb, _ in SERIES)

MARKERS = {UST: "o", UST_TUNED: "s", PIPE: "^", "pipe(2) -F": "v",
           "AF_UNIX stream": "D", "AF_UNIX seqpacket": "x", ZMQ: "*"}
# One colour per series in every chart (matplotlib's tab10 order).
COLORS = {lb: f"C{i}" for i, (lb, _) in enumerate(SERIES)}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Running perftest
# --------------------------------------------------------------------------

BLOCK_RE = re.compile(r"blockstats: mblks=(-?\d+) dblks=(-?\d+) bytes=(-?\d+)")
# A run that has not ended this many seconds after its interval is hung: the
# drain and close take well under a second, ustreams_quiesce waits 5 s at most.
# (Short, so that a hang costs the 5-minute budget of make bench little.)
HANG_AFTER = 15
TOTALS_RE = re.compile(r"totals: writes=(\d+) reads=(\d+)")
RAW_FIELDS = ["group", "series", "size", "rep", "writes_per_s", "reads_per_s", "bytes_per_s",
              "options", "rc", "mblks", "dblks", "bytes_outstanding", "total_writes",
              "total_reads"] + sweep_costs.COLUMNS


class Runner:
    def __init__(self, perftest, ttime, warmup):
        self.perftest = perftest
        self.ttime = ttime
        self.warmup = warmup
        self.raw = []          # every run, dicts
        self.failures = []     # (description, message)
        self.hung = 0          # ustreams runs that timed out
        self.stacks = []       # (description, command, gdb's thread stacks) of hung runs

    def run(self, group, series, size, rep, args, wrap=None, ttime=None, warmup=None):
        """One perftest run of one interval (of ttime seconds after warmup,
        by default the sweep's), under the command prefix wrap if given (perf
        stat); returns the result dict (also kept in self.raw) or None when
        the run failed."""
        ttime = self.ttime if ttime is None else ttime
        warmup = self.warmup if warmup is None else warmup
        cmd = (wrap or []) + shlex.split(self.perftest) + [
            "--csv", "-q", "-t", str(ttime), "-i", "1", "--warmup", str(warmup),
            "-s", str(size)] + args
        row = {f: "" for f in RAW_FIELDS}
        row.update(group=group, series=series, size=size, rep=rep, options=" ".join(args))
        # A session of its own, so that a hung run is killed with its children
        # (perftest under perf), which would otherwise keep the pipes open.
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True) as p:
            try:
                out, err = p.communicate(timeout=ttime + warmup + HANG_AFTER)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                if not wrap:  # under perf the pid is perf's
                    self.stacks.append((f"{series} size {size} rep {rep}", " ".join(cmd),
                                        thread_stacks(p.pid)))
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                out, _ = p.communicate()
                rc, err = "timeout", "perftest timed out (hung?)"
                if "--peer" not in args:
                    self.hung += 1
        row["rc"] = rc
        m = BLOCK_RE.search(err)
        if m:
            row["mblks"], row["dblks"], row["bytes_outstanding"] = map(int, m.groups())
        m = TOTALS_RE.search(err)
        if m:
            row["total_writes"], row["total_reads"] = map(int, m.groups())
        if wrap:
            sweep_costs.record(row, err)
        lines = [ln for ln in out.splitlines() if ln.count(",") >= 5]
        if lines:
            f = lines[-1].split(",")
            row["writes_per_s"] = float(f[2])
            row["reads_per_s"] = float(f[3])
            row["bytes_per_s"] = float(f[4])
        self.raw.append(row)
        if rc != 0 or not lines:
            msg = err.strip().splitlines()
            self.failures.append((f"{series} size {size} rep {rep}: rc {rc}",
                                  msg[-1] if msg else "no output"))
            return None if not lines else row
        return row


def thread_stacks(pid):
    """Every thread's stack of a hung process, by gdb if there is one: for
    whoever looks into the hang (the sweep writes them to hangs.txt)."""
    gdb = shutil.which("gdb")
    if not gdb:
        return "(no gdb: no stacks)"
    try:
        return subprocess.run([gdb, "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                              capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"(gdb failed: {e})"


def median_of(rows, key="writes_per_s"):
    vals = [r[key] for r in rows if r is not None and r[key] != ""]
    return statistics.median(vals) if vals else None


# --------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------

def lsq(xs, ys):
    """Least-squares line y = a + b x; returns (a, b) or (None, None)."""
    n = len(xs)
    if n < 2:
        return None, None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None, None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def delay_fit(med, label, sizes):
    pts = [(s, 1.0 / med[(label, s)]["writes_per_s"]) for s in sizes
           if s <= FIT_MAX and med.get((label, s)) and med[(label, s)]["writes_per_s"]]
    a, b = lsq([p[0] for p in pts], [p[1] for p in pts])
    return (a * 1e9, b * 1e9) if a is not None else (None, None)


def fmt_rate(v):
    if v is None:
        return "n/a"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= div:
            return f"{v / div:.2f} {unit}"
    return f"{v:.0f}"


def fmt_x(v):
    return "n/a" if v is None else f"{v:.2f}×"


def ratio(med, a, b, s, key="bytes_per_s"):
    ra, rb = med.get((a, s)), med.get((b, s))
    if not ra or not rb or not rb[key]:
        return None
    return ra[key] / rb[key]


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

def machine_info():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    cpu = ln.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    rev = "unknown"
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        # The published results (bench/results/, refreshed by make
        # bench-publish) are not a change to what was measured; the sweep's
        # own output goes to the git-ignored bench/out/.
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":(exclude)bench/results"],
                               capture_output=True, text=True).stdout.strip()
        if dirty:
            rev += " (with uncommitted changes)"
    except (OSError, subprocess.CalledProcessError):
        pass
    return f"{platform.node()}: {cpu}, {os.cpu_count()} CPUs, {platform.system()} " \
           f"{platform.release()}; commit {rev}"


def report(ctx, img_prefix):
    med, sizes, labels = ctx["med"], ctx["sizes"], ctx["labels"]
    L = []
    add = L.append
    add(f"# ustreams pipe benchmark, {ctx['date']}")
    add("")
    add(f"- machine: {ctx['machine']}")
    if ctx["from_raw"]:
        add(f"- re-plotted from `{ctx['from_raw']}` (the machine line is the re-plotting one); "
            f"median of the runs of each point; sizes {sizes[0]}..{sizes[-1]} B")
    else:
        add(f"- perftest: `{ctx['perftest']} -t {ctx['ttime']} -i 1 --warmup {ctx['warmup']}`, "
            f"{ctx['repeat']} runs per point, median kept; sizes {sizes[0]}..{sizes[-1]} B; "
            f"sweep took {ctx['elapsed']:.0f} s")
    add("- ustreams uses read(2)/write(2) (`-r`) like the peers; `-H -M -w -F` = hold "
        "(SNDHOLD) + M_READ (the reader's head releases the writer's hold before it "
        "blocks) + read-fill (RFILL) + full-size reads (64 KiB buffer)")
    if not ctx["ust_ok"]:
        add(f"- **ustreams was not measured**: {ctx['ust_error']}")
    if ctx["zmq_ok"]:
        add(f"- {ZMQ} (`--peer {ZMQ_PEER}`{ctx['zmq_version']}): one zmq_send / zmq_recv "
            "per write / read on a pair of ZMQ_PAIR sockets over inproc://, default "
            "high-water marks; the writer's end of file is an empty message")
    else:
        add(f"- **{ZMQ} was not measured**: {ctx['zmq_error']}")
    add("")
    for name, title in (("performance", "Performance"), ("delay", "Delay"),
                        ("throughput", "Throughput"), ("improvement", "Improvement"),
                        ("costs", "System calls and CPU time per message")):
        if name + ".png" in ctx["charts"]:
            add(f"![{title}]({img_prefix}{name}.png)")
    add("")

    add("## Throughput relative to pipe(2) (bytes/s ratio, median)")
    add("")
    others = [lb for lb in labels if lb != PIPE]
    add("| size | pipe(2) bytes/s | " + " | ".join(others) + " |")
    add("|---:|---:|" + "---:|" * len(others))
    for s in sizes:
        base = med.get((PIPE, s))
        cells = [fmt_x(ratio(med, lb, PIPE, s)) for lb in others]
        add(f"| {s} | {fmt_rate(base['bytes_per_s']) if base else 'n/a'} | "
            + " | ".join(cells) + " |")
    add("")

    add("## Delay: least-squares fit of seconds per write against size")
    add("")
    add(f"Fitted over the sizes up to {min(FIT_MAX, sizes[-1])} B: the intercept is the "
        "per-write overhead, the slope the per-byte cost.")
    add("")
    add("| implementation | intercept (ns per write) | slope (ns per byte) | "
        "intercept / pipe(2) |")
    add("|---|---:|---:|---:|")
    pa = ctx["fits"].get(PIPE, (None, None))[0]
    for lb in labels:
        a, b = ctx["fits"].get(lb, (None, None))
        if a is None:
            add(f"| {lb} | n/a | n/a | n/a |")
            continue
        rel = f"{a / pa:.2f}" if pa and pa > 0 else "n/a"
        add(f"| {lb} | {a:.0f} | {b:.4f} | {rel} |")
    add("")

    add("## Targets")
    add("")
    add("| target | measured | met |")
    add("|---|---|:-:|")
    for t in ctx["targets"]:
        add(f"| {t[0]} | {t[1]} | {t[2]} |")
    add("")
    L.extend(ctx["syscalls"])

    if ctx["options"]:
        add(f"## Stream-head options at {EXTRA_SIZE} B (ustreams)")
        add("")
        add("| options | writes/s | reads/s | bytes/s | × pipe(2) |")
        add("|---|---:|---:|---:|---:|")
        pbase = med.get((PIPE, EXTRA_SIZE))
        for label, r in ctx["options"]:
            if r is None:
                add(f"| {label} | failed | | | |")
                continue
            x = r["bytes_per_s"] / pbase["bytes_per_s"] if pbase else None
            add(f"| {label} | {fmt_rate(r['writes_per_s'])} | {fmt_rate(r['reads_per_s'])} | "
                f"{fmt_rate(r['bytes_per_s'])} | {fmt_x(x)} |")
        add("")

    if ctx["push"]:
        L.extend(sweep_costs.push_section(
            ctx["push"], EXTRA_SIZE, PUSH_TARGET_LOSS, fmt_rate,
            img_prefix + "push.png" if "push.png" in ctx["charts"] else None))

    if ctx["scale"]:
        add(f"## Two pipes at once (`--scale`), {EXTRA_SIZE} B, sum of both pairs")
        add("")
        add(f"| implementation | one pipe bytes/s | two pipes bytes/s | two / one |")
        add("|---|---:|---:|---:|")
        for label, one, two in ctx["scale"]:
            q = two["bytes_per_s"] / one["bytes_per_s"] if one and two else None
            add(f"| {label} | {fmt_rate(one['bytes_per_s']) if one else 'failed'} | "
                f"{fmt_rate(two['bytes_per_s']) if two else 'failed'} | {fmt_x(q)} |")
        add(f"\n{os.cpu_count()} CPUs: two pairs are four busy threads (plus the executive's "
            "scheduler threads for ustreams).")
        add("")

    add("## Message blocks outstanding after each ustreams run")
    add("")
    bs = ctx["blocks"]
    if bs["runs"]:
        verdict = "zero" if bs["nonzero"] == 0 else f"**NOT zero in {bs['nonzero']} runs**"
        add(f"{bs['runs']} ustreams runs; after both ends closed and `ustreams_quiesce`, "
            f"`ustreams_blockstats` was {verdict} (largest seen: mblks={bs['max'][0]}, "
            f"dblks={bs['max'][1]}, bytes={bs['max'][2]}).")
    else:
        add("No ustreams run reported block counters.")
    add("")

    if ctx["micro"]:
        add("## Micro-benchmarks (build/bench_micro --quick)")
        add("")
        add("| operation | ns/op | ops/s |")
        add("|---|---:|---:|")
        for r in ctx["micro"]:
            add(f"| {r.get('name', '')} | {r.get('ns_per_op', '')} | "
                f"{fmt_rate(float(r['ops_per_s'])) if r.get('ops_per_s') else ''} |")
        add("")

    if ctx["failures"]:
        add("## Failed runs")
        add("")
        if ctx["hangs"]:
            add(f"The thread stacks of the {ctx['hangs']} hung runs (gdb, just before the "
                "kill) are in `hangs.txt`.")
            add("")
        for what, msg in ctx["failures"][:30]:
            add(f"- {what}: `{msg}`")
        if len(ctx["failures"]) > 30:
            add(f"- ... and {len(ctx['failures']) - 30} more (see raw.csv, column rc)")
        add("")
    add("Raw data: `raw.csv` (every run), `medians.csv`. Timings from a shared machine are "
        "a report, not a test; compare ratios taken in the same run.")
    return "\n".join(L) + "\n"


def targets(med, sizes, fits):
    out = []
    small = [s for s in sizes if s <= 128]

    def min_ratio(label):
        rs = [(ratio(med, label, PIPE, s), s) for s in small]
        rs = [r for r in rs if r[0] is not None]
        return min(rs) if rs else (None, None)

    def verdict(v, need):
        return "n/a" if v is None else ("met" if v >= need else "not met")

    for label, need in ((UST, 5), (UST_TUNED, 10)):
        r, s = min_ratio(label)
        what = "n/a" if r is None else f"{r:.2f}× (smallest, at {s} B)"
        out.append((f"writes ≤ 128 B, {label}: ≥ {need}× pipe(2)", what, verdict(r, need)))

    def best_at(size):
        cands = [(ratio(med, lb, PIPE, size), lb) for lb in (UST, UST_TUNED)]
        cands = [c for c in cands if c[0] is not None]
        return max(cands) if cands else (None, None)

    for size, need, name in ((4096, 2, "4096 B"), (65536, 1, "64 KiB")):
        if size not in sizes:
            out.append((f"{name}: ≥ {need}× pipe(2)",
                        f"not measured (sizes stop at {sizes[-1]} B)", "n/a"))
            continue
        r, lb = best_at(size)
        what = "n/a" if r is None else f"{r:.2f}× ({lb})"
        out.append((f"{name}: ≥ {need}× pipe(2) (best ustreams configuration)", what,
                    verdict(r, need)))

    pa = fits.get(PIPE, (None, None))[0]
    for label in (UST, UST_TUNED):
        ua = fits.get(label, (None, None))[0]
        if ua is None or pa is None:
            out.append((f"delay intercept, {label}: ≤ 1/5 of pipe(2)", "n/a", "n/a"))
            continue
        if pa <= 0:
            out.append((f"delay intercept, {label}: ≤ 1/5 of pipe(2)",
                        f"{ua:.0f} ns vs {pa:.0f} ns: pipe(2)'s fit has no positive intercept",
                        "n/a"))
            continue
        q = ua / pa
        out.append((f"delay intercept, {label}: ≤ 1/5 of pipe(2)",
                    f"{ua:.0f} ns vs {pa:.0f} ns = {q:.2f}", "met" if q <= 0.2 else "not met"))
    return out


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def parse_args():
    def env_flag(name):
        return os.environ.get(name, "") not in ("", "0", "no", "false")

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--perftest", default="build/ustreams perftest",
                    help="the perftest command (program and leading arguments)")
    ap.add_argument("--micro-csv", help="CSV from build/bench_micro --csv, for the report")
    ap.add_argument("--repeat", type=int, default=int(os.environ.get("REPEAT", "3")))
    ap.add_argument("--time", type=float, default=0.4, help="seconds per run (perftest -t)")
    ap.add_argument("--warmup", type=float, default=0.05)
    ap.add_argument("--quick", action="store_true", default=env_flag("QUICK"),
                    help="sizes up to 4 KiB only (also QUICK=1)")
    ap.add_argument("--full", action="store_true", default=env_flag("FULL"),
                    help="sizes up to 64 KiB: the default; overrides --quick")
    ap.add_argument("--peers-only", action="store_true", help="skip ustreams")
    ap.add_argument("--no-extras", action="store_true",
                    help="skip the options/modules/scale tables")
    ap.add_argument("--no-syscalls", action="store_true",
                    help="skip the counts per message (perf stat; BENCH_PERF=no)")
    ap.add_argument("--from-raw", metavar="RAW_CSV",
                    help="measure nothing: redo medians, charts and report from a raw.csv")
    ap.add_argument("--out", default="bench/out")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    return ap.parse_args()


def probe(a, args):
    """(usable, why not): can perftest run with these arguments at all?"""
    try:
        p = subprocess.run(shlex.split(a.perftest) + ["--csv", "-q", "-t", "0.05"] + args,
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False, "perftest hung (no result in 60 s)"
    if p.returncode != 0 or not p.stdout.strip():
        lines = p.stderr.strip().splitlines() or ["no output"]
        return False, next((ln for ln in lines if ln.startswith("perftest:")), lines[-1])
    return True, ""


def probe_ustreams(a):
    if a.peers_only:
        return False, "skipped (--peers-only)"
    return probe(a, ["-r"])


def probe_zmq(a):
    """(usable, why not, ", libzmq VERSION" or "") for the ZeroMQ series."""
    ok, why = probe(a, ["--peer", ZMQ_PEER])
    if not ok and "unknown --peer" in why:
        why = ("this perftest was built without libzmq (CMake's pkg-config check found "
               "none; Debian: apt-get install libzmq3-dev, which `make bench` tries as root)")
    version = ""
    if ok:
        try:
            v = subprocess.run(["pkg-config", "--modversion", "libzmq"], capture_output=True,
                               text=True, timeout=30).stdout.strip()
            version = f", libzmq {v}" if v else ""
        except (OSError, subprocess.TimeoutExpired):
            pass
    return ok, why, version


def make_plan(a, sizes, series, ust_ok, perf):
    plan = []  # (group, label, size, rep, args)
    for rep in range(a.repeat):
        for s in sizes:
            for lb, args in series:
                plan.append(("sweep", lb, s, rep, args))
        if perf:
            for s in sweep_costs.within(sizes):
                for lb, args in series:
                    if s == EXTRA_SIZE or lb in COST_SERIES:
                        plan.append(("syscalls", lb, s, rep, args))
                        plan.append(("syscalls-base", lb, s, rep, args))
        if a.no_extras:
            continue
        if ust_ok:
            for lb, args in OPTION_SERIES:
                plan.append(("options", lb, EXTRA_SIZE, rep, args))
            for n in PUSH_COUNTS:
                plan.append(("push", f"-p {n}", EXTRA_SIZE, rep, ["-r", "-p", str(n)]))
        scale_impls = ([(UST, ["-r"])] if ust_ok else []) + [(PIPE, ["--peer", "pipe"])]
        for lb, args in scale_impls:
            plan.append(("scale", f"{lb} one", EXTRA_SIZE, rep, args))
            plan.append(("scale", f"{lb} two", EXTRA_SIZE, rep, args + ["--scale"]))
    return plan


def measure(a, runner, plan, started, perf):
    """Run the plan; returns {(group, label, size): [row or None per run]}.
    The syscalls groups run under perf (the base runs short, no warm-up)."""
    per_run = a.time + a.warmup + 0.05
    log(f"sweep: {len(plan)} runs of ~{per_run:.2f} s (~{len(plan) * per_run / 60:.1f} min), "
        f"{a.repeat} repetitions")
    results = {}
    for i, (group, lb, s, rep, args) in enumerate(plan, 1):
        if runner.hung >= 3 and "--peer" not in args:
            if runner.hung == 3:
                log("sweep: 3 ustreams runs hung: skipping the remaining ustreams runs")
                runner.failures.append(("ustreams", "3 runs hung; the rest were skipped"))
                runner.hung += 1
            results.setdefault((group, lb, s), []).append(None)
            continue
        if group == "syscalls":
            r = runner.run(group, lb, s, rep, args, wrap=perf)
        elif group == "syscalls-base":
            r = runner.run(group, lb, s, rep, args, wrap=perf,
                           ttime=sweep_costs.BASE_TIME, warmup=0)
        else:
            r = runner.run(group, lb, s, rep, args)
        results.setdefault((group, lb, s), []).append(r)
        if i % 10 == 0 or i == len(plan) or r is None:
            el = time.monotonic() - started
            eta = el / i * (len(plan) - i)
            got = f"{r['writes_per_s']:.3g} writes/s" if r else "FAILED"
            log(f"[{i:4d}/{len(plan)}] {el:5.0f} s, ~{eta:3.0f} s left  "
                f"{group:7s} {lb:18s} {s:6d} B rep {rep}: {got}")
    return results


def load_raw(path, runner):
    """Rebuild the results of a sweep from its raw.csv (--from-raw)."""
    results = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            for k in ["writes_per_s", "reads_per_s", "bytes_per_s", "mblks", "dblks",
                      "bytes_outstanding", "total_writes", "total_reads"] + sweep_costs.COLUMNS:
                if row.get(k) is None:
                    row[k] = ""  # a raw.csv of an older sweep
                elif row[k] != "":
                    row[k] = float(row[k]) if "per_s" in k or "." in row[k] else int(row[k])
            row["size"] = int(row["size"])
            runner.raw.append(row)
            ok = row["writes_per_s"] != ""
            if row["rc"] != "0":
                runner.failures.append((f"{row['series']} size {row['size']} rep {row['rep']}: "
                                        f"rc {row['rc']}", "see raw.csv"))
            results.setdefault((row["group"], row["series"], row["size"]), []).append(
                row if ok else None)
    return results


def main():
    a = parse_args()
    started = time.monotonic()
    runner = Runner(a.perftest, a.time, a.warmup)
    if a.from_raw:
        results = load_raw(a.from_raw, runner)
        sizes = sorted({s for (g, _, s) in results if g == "sweep"})
        present = {lb for (g, lb, _) in results if g == "sweep"}
        ok = {lb: any(r is not None for s in sizes for r in results.get(("sweep", lb, s), []))
              for lb in (UST, ZMQ)}
        found = {"ust_ok": ok[UST], "ust_error": "no ustreams rows in the raw data",
                 "zmq_ok": ok[ZMQ], "zmq_error": "no ZeroMQ rows in the raw data",
                 "zmq_version": "", "perf_error": None}
        if not any(g == "syscalls" for (g, _, _) in results):
            found["perf_error"] = "no runs under perf in the raw data"
        found["hw_note"] = None if any(r.get("instructions") not in ("", None)
                                       for r in runner.raw) else \
            "instructions and cycles: not in the raw data (not counted by that run)"
        labels = [lb for lb, _ in SERIES if lb in present]
    else:
        prog = (shlex.split(a.perftest) or [""])[0]
        if not (os.path.isfile(prog) and os.access(prog, os.X_OK)):
            log(f"sweep: {prog} not found: build it first (make)")
            return 2
        top = 4096 if a.quick and not a.full else 65536
        sizes = [1 << i for i in range(0, top.bit_length())]
        found = {}
        found["ust_ok"], found["ust_error"] = probe_ustreams(a)
        if not found["ust_ok"]:
            log(f"sweep: ustreams perftest failed ({found['ust_error']}); "
                "measuring the peers only")
        found["zmq_ok"], found["zmq_error"], found["zmq_version"] = probe_zmq(a)
        if not found["zmq_ok"]:
            log(f"sweep: no {ZMQ} series: {found['zmq_error']}")
        pr = perfstat.Probe(None, (), "skipped (--no-syscalls)", None) if a.no_syscalls \
            else perfstat.probe()
        perf, found["perf_error"], found["hw_note"] = pr.cmd, pr.error, pr.hw_note
        if not perf:
            log(f"sweep: no counts per message: {found['perf_error']}")
        elif found["hw_note"]:
            log(f"sweep: {found['hw_note']}")
        series = [(lb, args) for lb, args in SERIES
                  if (found["ust_ok"] or not lb.startswith("ustreams"))
                  and (found["zmq_ok"] or lb != ZMQ)]
        labels = [lb for lb, _ in series]
        log(f"sweep: sizes {sizes[0]}..{sizes[-1]}")
        results = measure(a, runner, make_plan(a, sizes, series, found["ust_ok"], perf),
                          started, perf)
    elapsed = time.monotonic() - started
    outdir = os.path.join(a.out, a.date)
    os.makedirs(outdir, exist_ok=True)
    if not a.from_raw:
        write_csv(os.path.join(outdir, "raw.csv"), runner.raw, RAW_FIELDS)
        hangs = os.path.join(outdir, "hangs.txt")
        if runner.stacks:
            with open(hangs, "w") as f:
                for what, cmd, stacks in runner.stacks:
                    f.write(f"==== {what}: {cmd}\n{stacks}\n")
        elif os.path.exists(hangs):
            os.remove(hangs)  # from an earlier run of the same day
    return write_report(a, runner, results, sizes, labels, found, outdir, elapsed)


def write_report(a, runner, results, sizes, labels, found, outdir, elapsed):
    """found: what the probes found (ust_ok, ust_error, zmq_ok, zmq_error,
    zmq_version, perf_error: None when the system calls were counted)."""
    ust_ok = found["ust_ok"]
    # Medians
    med = {}
    med_rows = []
    for (group, lb, s), rows in results.items():
        good = [r for r in rows if r is not None]
        if not good:
            continue
        m = {k: median_of(good, k) for k in ("writes_per_s", "reads_per_s", "bytes_per_s")}
        m.update(group=group, series=lb, size=s, n=len(good))
        med_rows.append(m)
        if group == "sweep":
            med[(lb, s)] = m

    def get(group, lb, s=EXTRA_SIZE):
        return next((m for m in med_rows if (m["group"], m["series"], m["size"]) == (group, lb, s)),
                    None)

    fits = {lb: delay_fit(med, lb, sizes) for lb in labels}
    have = {g for (g, _, _) in results}
    write_csv(os.path.join(outdir, "medians.csv"), med_rows,
              ["group", "series", "size", "writes_per_s", "reads_per_s", "bytes_per_s", "n"])
    made = sweep_charts.charts(med, labels, sizes, fits, outdir, ratio, PIPE, FIT_MAX, MARKERS,
                               COLORS)
    csz = sweep_costs.within(sizes)
    costs = sweep_costs.collect(results, labels, csz, "syscalls", "syscalls-base")
    if not found["perf_error"]:
        made += sweep_costs.chart(costs, labels, csz, outdir, "costs.png",
                                  "Per message, by perf stat (marginal; log scales)",
                                  MARKERS, COLORS)
    push = [(n, get("push", f"-p {n}")) for n in PUSH_COUNTS] \
        if ust_ok and "push" in have else []
    made += sweep_charts.push_chart(push, outdir, EXTRA_SIZE, PUSH_TARGET_LOSS)

    micro = []
    if a.micro_csv and not os.path.exists(a.micro_csv):
        log(f"sweep: no {a.micro_csv}: no micro-benchmark table")
    elif a.micro_csv:
        try:
            with open(a.micro_csv) as f:
                micro = list(csv.DictReader(f))
            dest = os.path.join(outdir, "micro.csv")
            if os.path.abspath(a.micro_csv) != os.path.abspath(dest):
                shutil.copy(a.micro_csv, dest)
        except OSError as e:
            log(f"sweep: --micro-csv {a.micro_csv}: {e}")

    ust_rows = [r for r in runner.raw if r["mblks"] != ""]
    nonzero = [r for r in ust_rows if r["mblks"] or r["dblks"] or r["bytes_outstanding"]]
    blocks = {"runs": len(ust_rows), "nonzero": len(nonzero),
              "max": tuple(max((r[k] for r in ust_rows), default=0)
                           for k in ("mblks", "dblks", "bytes_outstanding"))}
    scale = [(lb, get("scale", f"{lb} one"), get("scale", f"{lb} two"))
             for lb in ([UST] if ust_ok else []) + [PIPE] if "scale" in have]
    ctx = {
        "date": a.date, "machine": machine_info(), "perftest": a.perftest, "ttime": a.time,
        "warmup": a.warmup, "repeat": a.repeat, "elapsed": elapsed, "from_raw": a.from_raw,
        "ust_ok": ust_ok, "ust_error": found["ust_error"], "zmq_ok": found["zmq_ok"],
        "zmq_error": found["zmq_error"], "zmq_version": found["zmq_version"],
        "syscalls": sweep_costs.section(
            costs, labels, csz, found["perf_error"], found.get("hw_note"),
            "Per message, per size: system calls, CPU time (perf stat)")
        + sweep_costs.detail(costs, labels, EXTRA_SIZE, fmt_rate),
        "med": med, "sizes": sizes,
        "labels": labels, "fits": fits, "charts": [os.path.basename(p) for p in made],
        "targets": targets(med, sizes, fits) if ust_ok else [],
        "options": [(lb, get("options", lb)) for lb, _ in OPTION_SERIES]
        if ust_ok and "options" in have else [],
        "push": push,
        "scale": scale, "blocks": blocks, "hangs": len(runner.stacks), "micro": micro,
        "failures": runner.failures,
    }
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write(report(ctx, ""))

    # Stable copies for links: bench/out/latest.md + bench/out/latest/*.png
    latest = os.path.join(a.out, "latest")
    os.makedirs(latest, exist_ok=True)
    for p in made:
        shutil.copy(p, latest)
    with open(os.path.join(a.out, "latest.md"), "w") as f:
        f.write(report(ctx, "latest/").replace(
            "Raw data: `raw.csv`", f"Raw data: `{a.date}/raw.csv`").replace(
            "`medians.csv`", f"`{a.date}/medians.csv`").replace(
            "`hangs.txt`", f"`{a.date}/hangs.txt`"))

    log(f"sweep: done in {elapsed:.0f} s: {outdir}/results.md "
        f"({len(runner.failures)} failed runs)")
    print(report(ctx, outdir + "/"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
