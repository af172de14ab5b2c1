# SPDX-License-Identifier: MIT
"""Per message, per size: system calls, CPU time, and instructions and cycles
where the PMU offers them; for bench/sweep.py and bench/procs_sweep.py.

perftest runs under `perf stat -x,` (bench/perfstat.py: which events this
machine counts), which counts over the whole process, all its threads and
(with --procs) its forked reader included; perftest prints the messages it
wrote in the whole run ("totals: writes=N" on stderr with --csv).  A run also
makes the calls and spends the time of start-up and end (loading, threads, the
executive's start, the drain and close), a fixed cost that would weigh on a
figure near zero, so each point is two runs: a long one (the sweep's -t) and a
short one (BASE_TIME, no warm-up), and each figure is the difference of their
counts over the difference of their messages:

    per message = (count_long - count_short) / (writes_long - writes_short)

the marginal cost of one more message.  CPU time is task-clock: the CPU time
of every thread, spinning and polling included, so it is what a message costs
the machine, not its latency; "CPUs busy" is that cost times the long run's
writes/s (how many CPUs the pair kept busy).  The 64 B table adds the long
run's plain quotient of system calls (start-up and end included) and its
messages per read call.  When perf is missing or refused nothing is measured
and the report says why; instructions and cycles without a PMU are a
sentence, never a number.
"""

import statistics

import perfstat

BASE_TIME = 0.01
# The sizes measured under perf: the ends and the middle of the sweep.
SIZES = [1, 64, 4096, 65536]
# Raw-row columns (sweep.RAW_FIELDS) that perf fills.
COLUMNS = [perfstat.COLUMN[e] for e in perfstat.SOFTWARE + perfstat.HARDWARE]


def within(sizes):
    """The sizes measured under perf: SIZES within the sweep's sizes."""
    return [s for s in SIZES if s in sizes]


def record(row, stderr):
    """Put the counts perf printed in stderr into the raw row's columns ("" for
    an event not counted)."""
    got = perfstat.parse(stderr)
    for ev, col in perfstat.COLUMN.items():
        v = got.get(ev)
        row[col] = "" if v is None else v


def _num(row, col):
    v = row.get(col, "")
    if v in ("", None):
        return None
    return float(v)


def per_message(runs):
    """runs: {(phase, rep): row} with phase "long" or "base" for one series
    at one size.  Returns the medians over the pairs of runs, as a dict:
    syscalls, cpu_ns, instructions, cycles (per message, marginal; None
    where not counted), whole (system calls per message of the long run
    alone), batch (messages per read call), rate (writes/s of the long run),
    busy (CPUs busy), n (pairs used); or None when no pair has messages."""
    acc = {k: [] for k in ("syscalls", "cpu_ns", "instructions", "cycles", "whole", "batch",
                           "rate", "busy")}
    n = 0
    for (phase, rep), lr in runs.items():
        br = runs.get(("base", rep))
        if phase != "long" or lr is None or br is None:
            continue
        wl, wb = _num(lr, "total_writes"), _num(br, "total_writes")
        if wl is None or wb is None or wl <= wb:
            continue
        n += 1
        dw = wl - wb
        rate = _num(lr, "writes_per_s")
        for key, col, scale in (("syscalls", "syscalls", 1), ("cpu_ns", "task_clock_ms", 1e6),
                                ("instructions", "instructions", 1), ("cycles", "cycles", 1)):
            cl, cb = _num(lr, col), _num(br, col)
            if cl is not None and cb is not None:
                acc[key].append((cl - cb) * scale / dw)
                if key == "cpu_ns" and rate:
                    acc["busy"].append(acc[key][-1] * 1e-9 * rate)
        s = _num(lr, "syscalls")
        if s is not None:
            acc["whole"].append(s / wl)
        reads = _num(lr, "total_reads")
        if reads:
            acc["batch"].append(wl / reads)
        if rate is not None:
            acc["rate"].append(rate)
    if not n:
        return None
    out = {k: (statistics.median(v) if v else None) for k, v in acc.items()}
    out["n"] = n
    return out


def collect(results, labels, sizes, long_group, base_group):
    """{(label, size): per_message(...) or None} from results, which map
    (group, label, size) to the rows of its runs."""
    out = {}
    for lb in labels:
        for s in sizes:
            runs = {}
            for group, phase in ((long_group, "long"), (base_group, "base")):
                for rep, r in enumerate(results.get((group, lb, s), [])):
                    runs[(phase, rep)] = r
            if runs:
                out[(lb, s)] = per_message(runs)
    return out


def g(v):
    """A count per message: below 1e-4 is within the noise of start-up."""
    if v is None:
        return "n/a"
    if v < 1e-4:
        return "< 0.0001"
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def matrix(costs, labels, sizes, key, fmt):
    """A table, a row per size and a column per series, of costs' key; a
    series not run at a size is "–", a run that did not count is "n/a"."""
    cols = [lb for lb in labels if any((lb, s) in costs for s in sizes)]
    L = ["| size | " + " | ".join(cols) + " |", "|---:|" + "---:|" * len(cols)]
    for s in sizes:
        cells = []
        for lb in cols:
            if (lb, s) not in costs:
                cells.append("–")
                continue
            c = costs[(lb, s)]
            cells.append("n/a" if c is None or c[key] is None else fmt(c[key]))
        L.append(f"| {s} | " + " | ".join(cells) + " |")
    return L


def section(costs, labels, sizes, perf_error, hw_note, title, img=None):
    """The per-size section of a report, as a list of lines.  costs from
    collect(); perf_error: why nothing was counted (None when it was);
    hw_note: why instructions and cycles are not counted (None when they
    are); img: the chart's file name, when drawn."""
    out = [f"## {title}", ""]
    if perf_error:
        return out + [f"Not measured: {perf_error}.", ""]
    sizes = [s for s in sizes if any((lb, s) in costs for lb in labels)]
    if not any(costs.values()):
        return out + ["Not measured: no run under `perf stat` reported a count "
                      "(see Failed runs).", ""]
    if img:
        out += [f"![Per message against size]({img})", ""]
    out += ["System calls per message:", ""] + matrix(costs, labels, sizes, "syscalls", g)
    out += ["", "CPU time per message (ns, every thread, spinning included):", ""]
    out += matrix(costs, labels, sizes, "cpu_ns", lambda v: f"{v:.0f}" if v >= 10 else f"{v:.2g}")
    out += ["", "CPUs busy (CPU time per message × writes/s):", ""]
    out += matrix(costs, labels, sizes, "busy", lambda v: f"{v:.2f}")
    out.append("")
    if hw_note:
        out += [hw_note + ".", ""]
    else:
        for key, what in (("instructions", "Instructions"), ("cycles", "Cycles")):
            out += [f"{what} per message:", ""] + matrix(costs, labels, sizes, key, g) + [""]
    out += [f"`perf stat` over the whole perftest process (every thread, and a forked "
            f"reader): the difference between a run of the sweep's length and one of "
            f"{BASE_TIME} s, over the difference of the messages written, so start-up and end "
            "are left out; medians over the pairs of runs (bench/README.md, \"What make bench "
            "reports per size\").  On the kernel's peers a message costs a write(2) and a "
            "read(2); in user space what remains are wake-ups (futex, eventfd, poll).  CPU "
            "time counts a spinning reader's wait as spent.", ""]
    return out


def detail(costs, labels, size, fmt_rate):
    """The table at one size, with the long run's plain quotient and messages
    per read call (a list of lines; [] when nothing was measured there)."""
    rows = [(lb, costs.get((lb, size))) for lb in labels if (lb, size) in costs]
    if not any(r for _, r in rows):
        return []
    out = [f"### Every series at {size} B", "",
           "| implementation | system calls per message | the same, start-up and end "
           "included | messages per read call | CPU ns per message | writes/s under perf "
           "| pairs of runs |", "|---|---:|---:|---:|---:|---:|---:|"]
    for lb, r in rows:
        if r is None:
            out.append(f"| {lb} | not measured | | | | | |")
            continue
        cpu = "n/a" if r["cpu_ns"] is None else f"{r['cpu_ns']:.0f}"
        out.append(f"| {lb} | {g(r['syscalls'])} | {g(r['whole'])} | {g(r['batch'])} | "
                   f"{cpu} | {fmt_rate(r['rate'])} | {r['n']} |")
    return out + [""]


def chart(costs, labels, sizes, outdir, name, title, markers, colors):
    """Draw name (PNG) into outdir: system calls and CPU time per message
    (and instructions per message when counted) against size, log 2 x, log
    y.  Returns the paths made ([] without matplotlib or data).  A value
    <= 0 (a marginal count within the noise) cannot sit on a log axis: left
    out."""
    import sweep_charts
    keys = [("syscalls", "system calls per message"), ("cpu_ns", "CPU ns per message")]
    if any(c and c["instructions"] is not None for c in costs.values()):
        keys.append(("instructions", "instructions per message"))
    if not any(c and c[k] for c in costs.values() for k, _ in keys):
        return []
    plt = sweep_charts.pyplot()
    if plt is None:
        return []
    sizes = [s for s in sizes if any((lb, s) in costs for lb in labels)]
    fig, axes = plt.subplots(1, len(keys), figsize=(5.5 * len(keys), 4.5))
    for ax, (key, ylabel) in zip(axes, keys):
        for lb in labels:
            pts = [(s, costs[(lb, s)][key]) for s in sizes
                   if costs.get((lb, s)) and (costs[(lb, s)][key] or 0) > 0]
            if len(pts) >= 1:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers.get(lb, "."),
                        color=colors.get(lb), label=lb)
        sweep_charts.size_axis(ax, sizes)
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
    axes[0].legend(fontsize=7)
    fig.suptitle(title)
    made = []
    sweep_charts.save(plt, fig, outdir, name, made)
    return made


def push_section(push, size, target, fmt_rate, img=None):
    """The nullmod sweep's section (a list of lines): bytes/s for each count
    of nullmods pushed and the loss against none, 1 - bytes/s(N) /
    bytes/s(0), from the medians of the same make bench; then the verdict
    on the target (at most target % lost by 8 nullmods).  push: [(count,
    median row or None)], count 0 first; img: the chart's path, if drawn."""
    out = [f"## Modules pushed (nullmod) at {size} B (ustreams `-r -p N`)", ""]
    if img:
        out += [f"![Modules pushed]({img})", ""]
    out += ["| nullmods | bytes/s | loss vs 0 |", "|---:|---:|---:|"]
    b0 = push[0][1] if push and push[0][0] == 0 else None
    loss8 = None
    for n, r in push:
        if r is None:
            out.append(f"| {n} | failed | |")
            continue
        loss = (1 - r["bytes_per_s"] / b0["bytes_per_s"]) * 100 \
            if b0 and b0["bytes_per_s"] else None
        if n == 8:
            loss8 = loss
        out.append(f"| {n} | {fmt_rate(r['bytes_per_s'])} | "
                   f"{'n/a' if loss is None else f'{loss:.1f} %'} |")
    out.append("")
    if loss8 is not None:
        verdict = "met" if loss8 <= target else "missed"
        out += [f"Target (issue 24 item 2): 8 nullmods lose at most {target} % against none "
                f"at {size} B, same run: {loss8:.1f} %, {verdict} (bench/README.md \"Pushed "
                "modules\").", ""]
    return out
