# SPDX-License-Identifier: MIT
"""System calls per message, for bench/sweep.py.

perftest runs under `perf stat -e raw_syscalls:sys_enter -x,`, which counts
every system call that the process, all its threads included, enters; perftest
prints the messages it wrote in the whole run ("totals: writes=N" on stderr
with --csv).  A run also makes the calls of start-up and end (loading,
threads, the executive's start, the drain and close), a fixed cost that would
weigh on a figure that is nearly zero, so each point is two runs: a long one
(the sweep's -t) and a short one (BASE_TIME, no warm-up), and the figure is
the difference of their counts over the difference of their messages:

    per message = (calls_long - calls_short) / (writes_long - writes_short)

which is the marginal cost of one more message.  The report also gives the
long run's plain quotient (start-up and end included) and its messages per
read call, which tell how much of the count a batching reader saves.  When
perf is missing, or the kernel refuses the tracepoint, nothing is measured
and the report says why: never a guess.
"""

import os
import re
import shutil
import statistics
import subprocess

EVENT = "raw_syscalls:sys_enter"
BASE_TIME = 0.01
# perf stat -x, writes "COUNT,UNIT,EVENT,RUNTIME,PERCENT,," per event.
COUNT_RE = re.compile(r"^\s*([0-9]+|<not counted>|<not supported>),[^,\n]*," +
                      re.escape(EVENT) + ",", re.M)


def parse(stderr):
    """The count perf printed in stderr, or None."""
    m = COUNT_RE.search(stderr or "")
    return int(m.group(1)) if m and m.group(1).isdigit() else None


def _paranoid():
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def probe():
    """(the command prefix to wrap perftest with, "") when perf can count
    EVENT here, else (None, why not)."""
    perf = shutil.which("perf")
    if not perf:
        return None, "perf(1) is not installed (Debian: apt-get install linux-perf)"
    cmd = [perf, "stat", "-e", EVENT, "-x,", "--"]
    try:
        p = subprocess.run(cmd + ["true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"`perf stat` could not run: {e}"
    if p.returncode != 0 or parse(p.stderr) is None:
        why = (p.stderr.strip().splitlines() or ["no count printed"])[-1]
        return None, (f"`perf stat -e {EVENT}` did not count: {why} (uid {os.getuid()}, "
                      f"kernel.perf_event_paranoid {_paranoid()})")
    return cmd, ""


def per_message(runs):
    """runs: {(phase, rep): row} with phase "long" or "base" for one series.
    Returns the medians over the pairs of runs of (calls per message, calls
    per message of the long run alone, messages per read, writes/s of the
    long run), and the number of pairs; None when no pair of runs counted."""
    per, whole, batch, rates = [], [], [], []
    for (phase, rep), lr in runs.items():
        br = runs.get(("base", rep))
        if phase != "long" or lr is None or br is None:
            continue
        try:
            sl, sb = int(lr["syscalls"]), int(br["syscalls"])
            wl, wb = int(lr["total_writes"]), int(br["total_writes"])
        except (KeyError, TypeError, ValueError):
            continue
        if wl <= wb:
            continue
        per.append((sl - sb) / (wl - wb))
        whole.append(sl / wl)
        try:
            batch.append(wl / int(lr["total_reads"]))
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            pass
        if lr.get("writes_per_s") not in (None, ""):
            rates.append(float(lr["writes_per_s"]))
    if not per:
        return None

    def med(v):
        return statistics.median(v) if v else None
    return med(per), med(whole), med(batch), med(rates), len(per)


def table(results, labels, size, perf_error, fmt_rate):
    """The report's section, as a list of lines.  results maps
    (group, label, size) to the rows of its runs (group "syscalls" for the
    long runs, "syscalls-base" for the short ones)."""
    out = [f"## System calls per message at {size} B", ""]
    if perf_error:
        out += [f"Not measured: {perf_error}.", ""]
        return out
    rows = []
    for lb in labels:
        runs = {}
        for group, phase in (("syscalls", "long"), ("syscalls-base", "base")):
            for rep, r in enumerate(results.get((group, lb, size), [])):
                runs[(phase, rep)] = r
        rows.append((lb, per_message(runs)))
    if not any(r for _, r in rows):
        out += ["Not measured: no run under `perf stat` reported a count (see Failed runs).",
                ""]
        return out
    out += ["| implementation | system calls per message | the same, start-up and end "
            "included | messages per read call | writes/s under perf | pairs of runs |",
            "|---|---:|---:|---:|---:|---:|"]

    def g(v):  # below 1e-4 is within the noise of the start-up's count
        if v is None:
            return "n/a"
        return "< 0.0001" if v < 1e-4 else f"{v:.0f}" if v >= 100 else f"{v:.3g}"
    for lb, r in rows:
        if r is None:
            out.append(f"| {lb} | not measured | | | | |")
            continue
        k, whole, batch, rate, n = r
        out.append(f"| {lb} | {g(k)} | {g(whole)} | {g(batch)} | {fmt_rate(rate)} | {n} |")
    out += ["",
            f"Counted by `perf stat -e {EVENT}` over the whole perftest process (writer, "
            "reader and every other thread): the difference between a run of the sweep's "
            f"length and one of {BASE_TIME} s, divided by the difference of the messages "
            "written, so start-up and end are left out; the next column is the long run's "
            "count over its messages, start-up and end included.  Medians over the pairs.  "
            "On the kernel's peers a message costs a write(2) and a read(2), two calls; "
            "in user space what remains are wake-ups (futex, eventfd, poll), whose share "
            "falls as each side finds more work per wake-up.", ""]
    return out
