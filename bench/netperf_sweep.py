#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""netperf sweep: `build/ustreams netperf` over XTI (libxnet on /dev/udp and
/dev/tcp) and over the kernel's sockets, same machine, same run, and the
charts of seed 000 (throughput against message size, the XTI/sockets ratio).

    bench/netperf_sweep.py [--netperf 'build/ustreams netperf'] [--xti-open build/bench_xti_open]
                           [--quick] [--time SECONDS] [--max-iter N] [--out bench/out]
                           [--date YYYY-MM-DD] [--from-raw NETPERF_RAW_CSV]

Client and server run as two processes (netperf's default mode), and each
run reports the system calls per transaction of each side, tabled here.
Tests: UDP_STREAM over 1 B .. 65507 B, UDP_RR (1 B, 1 KiB), TCP_STREAM (64 B,
1 KiB, 16 KiB), TCP_RR (1 B); --quick (or QUICK=1) fewer sizes.  Each point
is one netperf run: iterations of --time seconds (default 0.3) until the
99 % confidence interval is within +-2.5 % of the mean, 3 to --max-iter
(default 10) of them; the two APIs of a point run one after the other, their
order alternating from point to point.  A series whose transport cannot be
opened (netperf's exit status 3: no tcp provider in the build) is reported
as missing, with the reason; it is neither a failure nor a number.  Then
bench_xti_open: t_open + t_bind against socket + bind.

Output, beside the pipe sweep's in bench/out/<date>/:
    netperf_raw.csv         every run (netperf's CSV line, exit status, message)
    netperf_xti_open.csv    bench_xti_open's CSV
    netperf_throughput.png  bytes/s received against message size, log-log
    netperf_ratio.png       XTI / sockets against message size
    netperf_syscalls.png    system calls per transaction / message, both processes
    netperf.md              tables: per test, ratios, targets
and bench/out/latest-netperf.md with bench/out/latest/netperf_*.png.
Timings are a report, never a test: the exit status is 0 unless netperf
could not be run at all.
"""

import argparse
import csv
import datetime
import os
import shlex
import shutil
import subprocess
import sys
import time

import sweep
import sweep_charts

UNAVAILABLE = 3  # netperf's exit status: the transport cannot be opened
APIS = [("xti", "XTI (libxnet)"), ("sock", "sockets")]
PLAN = [("UDP_STREAM", [1, 16, 64, 256, 1024, 4096, 16384, 65507]),
        ("UDP_RR", [1, 1024]),
        ("TCP_STREAM", [64, 1024, 16384]),
        ("TCP_RR", [1])]
QUICK_PLAN = [("UDP_STREAM", [1, 64, 1024, 65507]),
              ("UDP_RR", [1]),
              ("TCP_STREAM", [1024]),
              ("TCP_RR", [1])]
NP_FIELDS = ["test", "api", "family", "size", "mean", "unit", "ci_half", "ci_pct",
             "iterations", "ci_met", "msgs_per_s", "sent_per_s", "latency_us", "buffer",
             "mode", "client_pid", "server_pid", "calls_client", "calls_server", "calls_total",
             "calls_note"]
RAW_FIELDS = NP_FIELDS + ["rc", "message", "command"]
COLORS = {("UDP_STREAM", "xti"): "C0", ("UDP_STREAM", "sock"): "C1",
          ("TCP_STREAM", "xti"): "C2", ("TCP_STREAM", "sock"): "C3"}
MARKERS = {"xti": "o", "sock": "^"}

log = sweep.log


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------

def run_point(a, test, api, size):
    """One netperf run; its row (mean "" when it measured nothing)."""
    cmd = shlex.split(a.netperf) + ["-t", test, "--api", api, "-m", str(size),
                                    "-l", str(a.time), "-i", f"{a.max_iter},3", "--csv"]
    row = {f: "" for f in RAW_FIELDS}
    row.update(test=test, api=api, size=size, command=" ".join(cmd))
    timeout = a.max_iter * a.time + 20
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        row.update(rc="timeout", message=f"no result in {timeout:.0f} s")
        return row
    row["rc"] = p.returncode
    err = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    row["message"] = (err[-1] if err else "").removeprefix("netperf: ")
    if p.returncode == 0:
        lines = p.stdout.strip().splitlines()
        got = list(csv.DictReader(lines))
        if got:
            for k in NP_FIELDS:
                row[k] = got[0].get(k, "")
        else:
            row.update(rc="bad output", message=(lines or ["no output"])[-1])
    return row


def measure(a, plan):
    rows, missing = [], {}  # missing[(test, api)] = reason
    runs = [(t, s) for t, sizes in plan for s in sizes]
    started = time.monotonic()
    for i, (test, size) in enumerate(runs):
        order = APIS if i % 2 == 0 else APIS[::-1]
        for api, _ in order:
            if (test, api) in missing:
                continue
            r = run_point(a, test, api, size)
            if r["rc"] == UNAVAILABLE:
                missing[(test, api)] = r["message"]
                log(f"netperf sweep: {test} over {api}: {r['message']}: a missing series")
            rows.append(r)
            el = time.monotonic() - started
            got = (f"{float(r['mean']):.4g} {r['unit']} ({r['iterations']} it., "
                   f"CI {'met' if r['ci_met'] == 'yes' else 'not met'})"
                   if r["mean"] != "" else f"rc {r['rc']}: {r['message']}")
            log(f"[{i + 1:2d}/{len(runs)}] {el:4.0f} s  {test:10s} {api:4s} {size:6d} B: {got}")
    return rows, missing


def run_xti_open(a, outdir):
    """bench_xti_open's CSV as {what: ns}, or ({}, why not)."""
    prog = shlex.split(a.xti_open)
    if not prog or not os.access(prog[0], os.X_OK):
        return {}, f"{a.xti_open} not built"
    path = os.path.join(outdir, "netperf_xti_open.csv")
    try:
        p = subprocess.run(prog + ["-n", "5000", "--csv", path], capture_output=True,
                           text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {}, "bench_xti_open took over 120 s"
    if p.returncode != 0 or not os.path.exists(path):
        return {}, f"bench_xti_open failed (status {p.returncode})"
    return load_xti_open(path), ""


def load_xti_open(path):
    with open(path) as f:
        return {r["what"]: float(r["ns_per_op"]) for r in csv.DictReader(f)}


# --------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------

def index(rows):
    """{(test, api, size): row} of the runs that measured."""
    return {(r["test"], r["api"], int(r["size"])): r for r in rows if r["mean"] != ""}


def ratio(res, test, size, key="mean"):
    x, s = res.get((test, "xti", size)), res.get((test, "sock", size))
    if not x or not s or not float(s[key] or 0):
        return None
    return float(x[key]) / float(s[key])


def targets(res, plan, missing, xo, xo_why):
    out = []
    sizes = dict(plan)

    def verdict(v, need, le=False):
        if v is None:
            return "n/a"
        return "met" if (v <= need if le else v >= need) else "not met"

    def not_measured(test):
        why = missing.get((test, "xti")) or missing.get((test, "sock"))
        return f"not measured: {why}" if why else "not measured (no successful run)"

    def min_ratio(test, upto=None):
        rs = [(ratio(res, test, s), s) for s in sizes.get(test, []) if upto is None or s <= upto]
        rs = [r for r in rs if r[0] is not None]
        return min(rs) if rs else (None, None)

    for test, upto, need, name in (("UDP_STREAM", 1024, 1.5, "UDP_STREAM ≤ 1 KiB"),
                                   ("TCP_STREAM", None, 0.95, "TCP_STREAM"),
                                   ("TCP_RR", None, 0.9, "TCP_RR transactions/s"),
                                   ("UDP_RR", None, 0.9, "UDP_RR transactions/s")):
        r, s = min_ratio(test, upto)
        what = not_measured(test) if r is None else f"{r:.2f}× (smallest, at {s} B)"
        out.append((f"{name}: ≥ {need}× sockets", what, verdict(r, need)))
        if test.endswith("RR"):
            lat = [(ratio(res, test, s, "latency_us"), s) for s in sizes.get(test, [])]
            lat = [x for x in lat if x[0] is not None]
            worst = max(lat) if lat else (None, None)
            what = (not_measured(test) if worst[0] is None
                    else f"{worst[0]:.2f}× (largest, at {worst[1]} B)")
            out.append((f"{test} mean round trip: ≤ 1.1× sockets", what,
                        verdict(worst[0], 1.1, le=True)))
    for prov, sock in (("udp", "sock_udp"), ("tcp", "sock_tcp")):
        name = f"t_open + t_bind /dev/{prov}: ≤ 2× socket + bind"
        if not xo:
            out.append((name, f"not measured: {xo_why}", "n/a"))
        elif f"xti_{prov}" not in xo:
            out.append((name, f"not measured: /dev/{prov} does not open in this build", "n/a"))
        else:
            q = xo[f"xti_{prov}"] / xo[sock]
            out.append((name, f"{xo[f'xti_{prov}']:.0f} ns vs {xo[sock]:.0f} ns = {q:.2f}×",
                        verdict(q, 2, le=True)))
    return out


# --------------------------------------------------------------------------
# Charts
# --------------------------------------------------------------------------

def charts(res, plan, outdir):
    plt = sweep_charts.pyplot("netperf sweep")
    if plt is None:
        return []
    made = []
    streams = [(t, s) for t, s in plan if t.endswith("STREAM")]
    all_sizes = sorted({s for _, sizes in streams for s in sizes})

    fig, ax = plt.subplots(figsize=(8, 5))
    for test, sizes in streams:
        for api, label in APIS:
            pts = [(s, float(res[(test, api, s)]["mean"])) for s in sizes
                   if (test, api, s) in res]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=MARKERS[api],
                        color=COLORS[(test, api)], label=f"{test}, {label}")
    sweep_charts.size_axis(ax, all_sizes, "message size (bytes)")
    ax.set_yscale("log")
    ax.set_ylabel("bytes per second received")
    ax.set_title("Throughput: bytes/s received against message size (loopback)")
    ax.legend(fontsize=8)
    sweep_charts.save(plt, fig, outdir, "netperf_throughput.png", made)

    fig, ax = plt.subplots(figsize=(8, 5))
    for test, sizes in streams:
        pts = [(s, ratio(res, test, s)) for s in sizes]
        pts = [p for p in pts if p[1] is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    color=COLORS[(test, "xti")], label=f"{test}: XTI / sockets")
    ax.axhline(1, color="black", linewidth=0.8)
    ax.axhline(1.5, color="C0", linewidth=0.8, linestyle="--",
               label="UDP_STREAM ≤ 1 KiB target (1.5×)")
    sweep_charts.size_axis(ax, all_sizes, "message size (bytes)")
    ax.set_ylabel("XTI bytes/s ÷ sockets bytes/s")
    ax.set_title("XTI over /dev/udp, /dev/tcp relative to sockets (1 = as fast)")
    ax.legend(fontsize=8)
    sweep_charts.save(plt, fig, outdir, "netperf_ratio.png", made)

    # System calls per transaction (RR) or per message delivered (STREAM),
    # both processes together, XTI beside sockets.
    pts = [(t, s) for t, sizes in plan for s in sizes]
    vals = {api: [calls_total(res.get((t, api, s))) for t, s in pts] for api, _ in APIS}
    if any(v is not None for vs in vals.values() for v in vs):
        fig, ax = plt.subplots(figsize=(9, 5))
        w = 0.4
        for k, (api, label) in enumerate(APIS):
            xs = [i + (k - 0.5) * w for i in range(len(pts))]
            ax.bar(xs, [v or 0 for v in vals[api]], width=w, label=label,
                   color="C0" if api == "xti" else "C1")
        ax.set_xticks(range(len(pts)))
        ax.set_xticklabels([f"{t}\n{sweep_charts.size_label(s)}" for t, s in pts], fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel("system calls (client + server)")
        ax.set_title("System calls per transaction (RR) / per message delivered (STREAM)")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)
        sweep_charts.save(plt, fig, outdir, "netperf_syscalls.png", made)
    return made


def calls_total(r):
    """Both processes' system calls per operation of a run, or None."""
    v = (r or {}).get("calls_total", "")
    return float(v) if v not in ("", None) else None


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

def ci_cell(r):
    if not r:
        return "n/a"
    ci = f"±{float(r['ci_pct']):.1f} %" if r["ci_pct"] != "" else "no CI"
    met = "met" if r["ci_met"] == "yes" else "not met"
    return f"{ci}, {r['iterations']} it., {met}"


def report(ctx, img_prefix):
    res, plan = ctx["res"], ctx["plan"]
    L = []
    add = L.append
    add(f"# ustreams netperf benchmark, {ctx['date']}")
    add("")
    add(f"- machine: {ctx['machine']}")
    if ctx["from_raw"]:
        add(f"- re-reported from `{ctx['from_raw']}`")
    else:
        add(f"- `{ctx['netperf']} -t TEST --api xti|sock -m SIZE -l {ctx['time']} "
            f"-i {ctx['max_iter']},3 --csv` (99 % confidence interval within ±2.5 % of the "
            f"mean, 3 to {ctx['max_iter']} iterations of {ctx['time']} s; buffers 131072 "
            f"bytes both APIs); sweep took {ctx['elapsed']:.0f} s")
    add("- client (sender) and server (receiver) are two processes on 127.0.0.1, as netperf "
        "and netserver; XTI and sockets alternate point by point in one run; STREAM "
        "figures are bytes/s **received** (UDP datagrams the kernel dropped do not count); "
        "RR figures are transactions/s, one request and one response of SIZE bytes in "
        "flight, the round trip their inverse")
    for (test, api), why in sorted(ctx["missing"].items()):
        add(f"- **{test} over {api} was not measured**: {why}")
    add("")
    for name, title in (("netperf_throughput", "Throughput"), ("netperf_ratio", "XTI / sockets"),
                        ("netperf_syscalls", "System calls per operation")):
        if name + ".png" in ctx["charts"]:
            add(f"![{title}]({img_prefix}{name}.png)")
    add("")
    for test, sizes in plan:
        rr = test.endswith("RR")
        add(f"## {test}")
        add("")
        unit = "transactions/s" if rr else "bytes/s received"
        add(f"| size | XTI {unit} | XTI CI | sockets {unit} | sockets CI | XTI / sockets |"
            + (" round trip XTI / sockets (µs) |" if rr else " XTI / sockets datagrams sent/s |"
               if test == "UDP_STREAM" else ""))
        add("|---:|---:|---|---:|---|---:|" + ("---:|" if rr or test == "UDP_STREAM" else ""))
        for s in sizes:
            x, k = res.get((test, "xti", s)), res.get((test, "sock", s))
            cells = [str(s), sweep.fmt_rate(float(x["mean"])) if x else "n/a", ci_cell(x),
                     sweep.fmt_rate(float(k["mean"])) if k else "n/a", ci_cell(k),
                     sweep.fmt_x(ratio(res, test, s))]
            if rr:
                cells.append(f"{float(x['latency_us']):.1f} / {float(k['latency_us']):.1f}"
                             if x and k else "n/a")
            elif test == "UDP_STREAM":
                cells.append(f"{sweep.fmt_rate(float(x['sent_per_s']))} / "
                             f"{sweep.fmt_rate(float(k['sent_per_s']))}" if x and k else "n/a")
            add("| " + " | ".join(cells) + " |")
        add("")
    add("## System calls per transaction (RR) or per message (STREAM)")
    add("")
    add("Counted by `ustreams netperf` itself over the measured iterations "
        "(perf_event_open on raw_syscalls:sys_enter, every thread of each process, the "
        "library's own included); STREAM: the client's per message sent, the server's per "
        "message delivered (-m bytes received: a TCP receive may hold many sends).")
    add("")
    add("| test | size | XTI client | XTI server | sockets client | sockets server |")
    add("|---|---:|---:|---:|---:|---:|")
    notes = set()
    for test, sizes in plan:
        for s in sizes:
            cells = [test, str(s)]
            for api in ("xti", "sock"):
                r = res.get((test, api, s))
                for side in ("calls_client", "calls_server"):
                    v = (r or {}).get(side, "")
                    cells.append(f"{float(v):.2f}" if v not in ("", None) else "n/a")
                    if r and v in ("", None) and r.get("calls_note"):
                        notes.add(r["calls_note"])
            add("| " + " | ".join(cells) + " |")
    add("")
    for n in sorted(notes):
        add(f"- not counted: {n}")
    if notes:
        add("")
    add("## Targets (ratios to sockets in the same run)")
    add("")
    add("| target | measured | |")
    add("|---|---|---|")
    for name, what, v in ctx["targets"]:
        add(f"| {name} | {what} | {v} |")
    add("")
    if ctx["xo"]:
        add("## Making a bound endpoint (bench_xti_open, ns per open + bind + close)")
        add("")
        add("| endpoint | ns |")
        add("|---|---:|")
        for k, v in ctx["xo"].items():
            add(f"| {k} | {v:.0f} |")
        add("")
    if ctx["failures"]:
        add("## Failed runs")
        add("")
        for r in ctx["failures"]:
            add(f"- {r['test']} {r['api']} {r['size']} B: status {r['rc']}: {r['message']}")
        add("")
    add("Raw data: `netperf_raw.csv` (every run), `netperf_xti_open.csv`.  Timings from a "
        "shared machine: compare the ratios, not the absolute rates.")
    return "\n".join(L) + "\n"


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def parse_args():
    quick = os.environ.get("QUICK", "") not in ("", "0", "no", "false")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--netperf", default="build/ustreams netperf")
    ap.add_argument("--xti-open", default="build/bench_xti_open")
    ap.add_argument("--quick", action="store_true", default=quick)
    ap.add_argument("--time", type=float, default=0.3, help="seconds per iteration (-l)")
    ap.add_argument("--max-iter", type=int, default=10, help="most iterations per point")
    ap.add_argument("--from-raw", metavar="NETPERF_RAW_CSV",
                    help="measure nothing: redo the charts and report from a netperf_raw.csv")
    ap.add_argument("--out", default="bench/out")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    return ap.parse_args()


def main():
    a = parse_args()
    started = time.monotonic()
    outdir = os.path.join(a.out, a.date)
    os.makedirs(outdir, exist_ok=True)
    plan = QUICK_PLAN if a.quick else PLAN
    if a.from_raw:
        with open(a.from_raw) as f:
            rows = list(csv.DictReader(f))
        missing = {(r["test"], r["api"]): r["message"] for r in rows
                   if r["rc"] == str(UNAVAILABLE)}
        sizes = {}
        for r in rows:
            sizes.setdefault(r["test"], set()).add(int(r["size"]))
        plan = [(t, sorted(sizes[t])) for t, _ in PLAN if t in sizes]
        xo_path = os.path.join(os.path.dirname(a.from_raw), "netperf_xti_open.csv")
        xo = load_xti_open(xo_path) if os.path.exists(xo_path) else {}
        xo_why = "no netperf_xti_open.csv beside the raw data"
    else:
        prog = (shlex.split(a.netperf) or [""])[0]
        if not (os.path.isfile(prog) and os.access(prog, os.X_OK)):
            log(f"netperf sweep: {prog} not found: build it first (make)")
            return 2
        n = sum(len(s) for _, s in plan) * 2
        log(f"netperf sweep: {n} runs of at most {a.max_iter} x {a.time} s")
        rows, missing = measure(a, plan)
        if not any(r["mean"] != "" for r in rows):
            log("netperf sweep: no run measured anything")
        write_rows = [{k: r[k] for k in RAW_FIELDS} for r in rows]
        sweep.write_csv(os.path.join(outdir, "netperf_raw.csv"), write_rows, RAW_FIELDS)
        xo, xo_why = run_xti_open(a, outdir)
        if not xo:
            log(f"netperf sweep: no endpoint costs: {xo_why}")
    res = index(rows)
    made = charts(res, plan, outdir)
    ctx = {"date": a.date, "machine": sweep.machine_info(), "from_raw": a.from_raw,
           "netperf": a.netperf, "time": a.time, "max_iter": a.max_iter,
           "elapsed": time.monotonic() - started, "res": res, "plan": plan,
           "missing": missing, "charts": [os.path.basename(p) for p in made], "xo": xo,
           "targets": targets(res, plan, missing, xo, xo_why),
           "failures": [r for r in rows if r["rc"] not in ("0", 0, str(UNAVAILABLE),
                                                           UNAVAILABLE)]}
    with open(os.path.join(outdir, "netperf.md"), "w") as f:
        f.write(report(ctx, ""))
    latest = os.path.join(a.out, "latest")
    os.makedirs(latest, exist_ok=True)
    for p in made:
        shutil.copy(p, latest)
    with open(os.path.join(a.out, "latest-netperf.md"), "w") as f:
        f.write(report(ctx, "latest/").replace(
            "Raw data: `netperf_raw.csv`", f"Raw data: `{a.date}/netperf_raw.csv`").replace(
            "`netperf_xti_open.csv`", f"`{a.date}/netperf_xti_open.csv`"))
    log(f"netperf sweep: done in {ctx['elapsed']:.0f} s: {outdir}/netperf.md "
        f"({len(ctx['failures'])} failed runs, {len(missing)} missing series)")
    print(report(ctx, outdir + "/"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
