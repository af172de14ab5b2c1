# SPDX-License-Identifier: MIT
"""The four charts of the OpenSS7 pipe paper, for bench/sweep.py: performance
(writes/s against log2 size), delay (microseconds per write against size,
with each least-squares line), throughput (bytes/s, log-log) and improvement
(% of writes/s over the base series).  Needs matplotlib (the venv of
bench/requirements.txt); without it, no charts.  The helpers pyplot,
size_axis and save serve bench/netperf_sweep.py's charts too."""

import os
import sys


def size_label(s):
    return f"{s // 1024}K" if s >= 1024 else str(s)


def pyplot(who="sweep"):
    """matplotlib.pyplot with the Agg backend, or None (said on stderr)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print(f"{who}: matplotlib not available: no charts (make venv)", file=sys.stderr)
        return None


def size_axis(ax, sizes, xlabel="write size (bytes)"):
    """A log2 x axis ticked at the sizes, with a grid."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(s) for s in sizes], fontsize=8)
    ax.set_xlabel(xlabel)
    ax.grid(True, which="both", alpha=0.3)


def save(plt, fig, outdir, name, made):
    """Write fig as outdir/name (PNG), close it, append the path to made."""
    path = os.path.join(outdir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    made.append(path)


def charts(med, labels, sizes, fits, outdir, ratio, base, fit_max, markers, colors):
    """Draw the four charts into outdir; returns the paths made ([] without
    matplotlib).  med[(label, size)] are the medians, fits[label] the delay
    line (intercept ns, slope ns/B), ratio(med, a, b, size, key) a ratio of
    two medians, base the label the improvement chart is relative to,
    fit_max the largest size of the delay chart."""
    plt = pyplot()
    if plt is None:
        return []

    def series_pts(label, fn):
        xs, ys = [], []
        for s in sizes:
            r = med.get((label, s))
            if r and r["writes_per_s"]:
                xs.append(s)
                ys.append(fn(r, s))
        return xs, ys

    def log2_axis(ax):
        size_axis(ax, sizes)

    made = []

    def save_fig(fig, name):
        save(plt, fig, outdir, name, made)

    def log_chart(value, ylabel, title, name):
        """One line per series of value(row, size) against log2 size, log y."""
        fig, ax = plt.subplots(figsize=(8, 5))
        for label in labels:
            xs, ys = series_pts(label, value)
            if xs:
                ax.plot(xs, ys, marker=markers.get(label, "."),
                        color=colors.get(label), label=label)
        log2_axis(ax)
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize=8)
        save_fig(fig, name)

    # performance: writes/s against log size
    log_chart(lambda r, s: r["writes_per_s"], "writes per second",
              "Performance: writes/s against write size", "performance.png")

    # delay: seconds per write against size (up to fit_max), with the
    # least-squares line
    fig, ax = plt.subplots(figsize=(8, 5))
    fit_top = max(s for s in sizes if s <= fit_max)
    for label in labels:
        xs, ys = series_pts(label, lambda r, s: 1e6 / r["writes_per_s"])
        xs, ys = [x for x in xs if x <= fit_max], [y for x, y in zip(xs, ys) if x <= fit_max]
        if not xs:
            continue
        a, b = fits.get(label, (None, None))
        leg = label if a is None else f"{label}: {a:.0f} ns + {b:.3f} ns/B"
        line, = ax.plot(xs, ys, marker=markers.get(label, "."), linestyle="none",
                        color=colors.get(label), label=leg)
        if a is not None:
            ax.plot([0, fit_top], [a / 1e3, (a + b * fit_top) / 1e3],
                    color=line.get_color(), linewidth=1)
    ax.set_xlabel("write size (bytes)")
    ax.set_ylabel("microseconds per write")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title(f"Delay: time per write, sizes ≤ {fit_top} B "
                 "(least squares: intercept + slope)")
    ax.legend(fontsize=8)
    save_fig(fig, "delay.png")

    # throughput: log bytes/s against log size
    log_chart(lambda r, s: r["writes_per_s"] * s, "bytes per second",
              "Throughput: bytes/s against write size", "throughput.png")

    # improvement: % over pipe(2)
    fig, ax = plt.subplots(figsize=(8, 5))
    for label in labels:
        if label == base:
            continue
        xs, ys = [], []
        for s in sizes:
            q = ratio(med, label, base, s, "writes_per_s")
            if q is not None:
                xs.append(s)
                ys.append((q - 1) * 100)
        if xs:
            ax.plot(xs, ys, marker=markers.get(label, "."),
                    color=colors.get(label), label=label)
    ax.axhline(0, color="black", linewidth=0.8)
    log2_axis(ax)
    ax.set_ylabel(f"% improvement in writes/s over {base}")
    ax.set_title(f"Improvement over {base}")
    ax.legend(fontsize=8)
    save_fig(fig, "improvement.png")
    return made


def push_chart(push, outdir, size, target):
    """The nullmod sweep as a bar chart: % of bytes/s lost against no module
    for each count of nullmods pushed, with the target as a dashed line.
    push: [(count, median row or None)], count 0 first.  Returns the paths
    made ([] without matplotlib, or without the run of 0 modules)."""
    b0 = push[0][1] if push and push[0][0] == 0 else None
    pts = [(n, (1 - r["bytes_per_s"] / b0["bytes_per_s"]) * 100) for n, r in push[1:]
           if r is not None and b0 and b0["bytes_per_s"]]
    if not pts:
        return []
    plt = pyplot()
    if plt is None:
        return []
    fig, ax = plt.subplots(figsize=(5, 3.5))
    xs = [str(n) for n, _ in pts]
    bars = ax.bar(xs, [v for _, v in pts], color="C0")
    for b, (_, v) in zip(bars, pts):
        ax.annotate(f"{v:.0f} %", (b.get_x() + b.get_width() / 2, max(v, 0)),
                    ha="center", va="bottom", fontsize=8)
    ax.axhline(target, color="C3", linestyle="--", linewidth=1, label=f"target ≤ {target} %")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylim(min(0, min(v for _, v in pts)) - 5, 120)  # room for the legend above the bars
    ax.set_xlabel("nullmods pushed")
    ax.set_ylabel("% of bytes/s lost against none")
    ax.set_title(f"Modules pushed, {size} B writes (ustreams -r -p N)", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(True, axis="y", alpha=0.3)
    made = []
    save(plt, fig, outdir, "push.png", made)
    return made
