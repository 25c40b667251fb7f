#!/usr/bin/python3
"""dmuon-sim's own cost against GPU count (reports/sim-speed.md), from the CSV that
harness/tools/sim_speed_bench.sh writes (gpus,strategy,tag,run,rc,wall_s,rss_kB,plan_s,sim_s,
load1,cpu_s; tags "before" and "after"). Left: median wall seconds; middle: median CPU seconds
of the process tree (less sensitive to other jobs on the machine); right: peak RSS. One colour
per strategy (plot.py's), dashed before, solid after.

    /usr/bin/python3 harness/tools/plot_sim_speed.py TIMINGS.csv --out reports/figures/sim-speed

Needs Debian's python3-matplotlib (Agg backend). A malformed row ends with one line naming the
file and line and exit status 2.
"""

import argparse
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot  # noqa: E402  (the Agg backend, strategy order and colours)

FIELDS = ["gpus", "strategy", "tag", "run", "rc", "wall_s", "rss_kB", "plan_s", "sim_s", "load1", "cpu_s"]


def read_rows(path):
    rows = []
    with open(path, newline="") as f:
        for line, rec in enumerate(csv.reader(f), 1):
            if not rec or rec[0] == "gpus":
                continue
            if len(rec) != len(FIELDS):
                sys.exit(f"{path}:{line}: expected {len(FIELDS)} fields ({','.join(FIELDS)}), got {len(rec)}")
            rows.append(dict(zip(FIELDS, rec)))
    return rows


def medians(rows):
    """(tag, strategy) -> sorted [(gpus, wall, cpu, rss_GiB)] over the successful runs."""
    groups = {}
    for r in rows:
        if r["rc"] != "0":
            continue
        key = (r["tag"], r["strategy"], int(r["gpus"]))
        groups.setdefault(key, []).append((float(r["wall_s"]), float(r["cpu_s"] or "nan"), float(r["rss_kB"]) / 2**20))
    out = {}
    for (tag, strategy, gpus), runs in groups.items():
        cols = [[x for x in c if x == x] for c in zip(*runs)]  # x == x: not NaN (no CPU time recorded)
        out.setdefault((tag, strategy), []).append((gpus, *(statistics.median(c) if c else float("nan") for c in cols)))
    return {k: sorted(v) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--out", default="sim-speed")
    a = ap.parse_args()
    series = medians(read_rows(a.csv))
    fig, axes = plot.plt.subplots(1, 3, figsize=(12, 3.8), dpi=plot.DPI)
    titles = ["wall seconds (median)", "CPU seconds (median)", "peak RSS, GiB"]
    for i, ax in enumerate(axes):
        for strategy in plot.STRATEGY_COLOR:  # plot.py's strategy order
            for tag, style in (("before", "--"), ("after", "-")):
                pts = series.get((tag, strategy))
                if not pts:
                    continue
                ys = [p[1 + i] for p in pts]
                if all(y != y for y in ys):  # all NaN: not recorded for this series
                    continue
                label = f"{strategy} {tag}" if i == 0 else None
                ax.plot([p[0] for p in pts], ys, style, marker="o", ms=3, color=plot.STRATEGY_COLOR[strategy], label=label)
        ax.set_xscale("log", base=2)
        if ax.lines:
            ax.set_yscale("log")
        ax.set_xlabel("GPUs (scenarios/16node.yaml, --sweep nodes)")
        ax.set_title(titles[i])
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(a.out + ".png")
    print(a.out + ".png")


if __name__ == "__main__":
    main()
