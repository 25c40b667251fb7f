#!/usr/bin/python3
"""Plots from the JSON that dmuon-sim, dmuon-sim --validate and dmuon-bench write (PNG and SVG).

    /usr/bin/python3 harness/tools/plot.py scaling   SWEEP.json [--published nodes=16,strategy=dedicated,ms=1285]...
                                                     [--published-from reports/sim-validation.json [--published-nodes N]]
    /usr/bin/python3 harness/tools/plot.py breakdown SIM.json [--run INDEX | --sweep-value TEXT]
    /usr/bin/python3 harness/tools/plot.py owners    STEP.json [--strategy S]
    /usr/bin/python3 harness/tools/plot.py parity    VALIDATION.json...
    /usr/bin/python3 harness/tools/plot.py kernels   KERNELS.json
  common: --out PREFIX (writes PREFIX.png and PREFIX.svg; default: the subcommand's name)
          [--format png,svg] [--series FILE] (the plotted series as JSON, for tests and scripts)

Inputs (the writers are the reference for the formats):
  scaling, breakdown: `dmuon-sim --json` (harness/sim/sim_report.cpp write_json): runs[] with
    nodes, sweep_value and strategies[] (strategy, simulated, step_seconds,
    fwd_bwd_compute_seconds, exposed_comm_seconds, owner_imbalance). breakdown stacks
    forward+backward compute, exposed communication (the step minus the compute stream's busy
    time, as the simulator defines it) and the rest, the optimizer's compute: they sum to
    step_seconds (optimizer_seconds, the optimizer phase's wall time, also holds its exposed
    collectives, so it is kept in the series but not stacked).
  owners: `dmuon-bench step` (harness/dmuon_bench_step_report.cpp): strategies[].ranks[] with
    ns_busy_seconds (measured Newton-Schulz time per rank). A dmuon-sim JSON holds no per-rank
    times, only owner_imbalance per strategy (max/mean - 1 of the owners' NS cost); given one,
    owners says so and plots that instead.
  parity: `dmuon-sim --validate --json` (harness/sim/sim_validate.cpp write_validation_json):
    rows[] with strategy, quantity, unit ("s" or "bytes"; absent in older files = seconds),
    predicted/measured (older files: predicted_seconds/measured_seconds). Only rows in seconds
    are plotted; the others are counted in the series as skipped.
  kernels: `dmuon-bench kernels --report-json` (harness/bench/kernel_report.cpp): rows[] with
    rows, cols, batch, preset, models, speedup_vs_torch.
Published step times are not part of dmuon-sim's JSON: pass them with --published (repeatable;
nodes, strategy, ms, optional label) or read them from the a800_published rows of
reports/sim-validation.json (--published-from; rows whose scenario is the sweep's file,
quantity total_step; they carry no node count, so give it with --published-nodes).

Needs Debian's python3-matplotlib and python3-numpy (run with /usr/bin/python3; Agg backend, no
display). A malformed file or a missing field ends with one line naming the file and field and
exit status 2.
"""

import argparse
import json
import math
import os
import sys

# No display: the Agg backend must be chosen before pyplot is imported.
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Reproducible SVG ids and no timestamps in the files.
matplotlib.rcParams["svg.hashsalt"] = "dmuon"
matplotlib.rcParams["font.size"] = 8

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_series import (  # noqa: E402 (harness/tools/plot_series.py, beside this script)
    PlotError, breakdown_series, kernels_series, load_json, owners_series, parity_series, parse_published,
    published_from, scaling_series, sim_runs)

STRATEGY_COLOR = {"adamw": "black", "ddp-redundant": "tab:red", "fsdp-gather": "tab:orange",
                  "zero1-a2a": "tab:blue", "dedicated": "tab:green", "owner-striped": "tab:purple"}
DPI = 110




# --- drawing ---------------------------------------------------------------------------------

def save(fig, prefix, formats):
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    written = []
    for fmt in formats:
        target = f"{prefix}.{fmt}"
        # No creation date or software version in the files: re-rendering changes nothing.
        meta = {"Date": None} if fmt == "svg" else {"Software": None}
        fig.savefig(target, format=fmt, dpi=DPI, metadata=meta)
        written.append(target)
    plt.close(fig)
    return written


def draw_scaling(s):
    fig, (ax, axd) = plt.subplots(1, 2, figsize=(9, 3.6), gridspec_kw={"width_ratios": [3, 2]})
    for name, line in s["strategies"].items():
        ref = name == "adamw"
        ax.plot(line["nodes"], line["step_ms"], marker="o", ms=3.5, color=STRATEGY_COLOR.get(name),
                linestyle="--" if ref else "-", label=f"{name} (reference)" if ref else name)
        if "delta_vs_adamw_pct" in line and not ref:
            pts = [(n, d) for n, d in zip(line["nodes"], line["delta_vs_adamw_pct"]) if d is not None]
            axd.plot([n for n, _ in pts], [d for _, d in pts], marker="o", ms=3.5, color=STRATEGY_COLOR.get(name),
                     label=name)
    for p in s["published"]:
        color = STRATEGY_COLOR.get(p["strategy"], "gray")
        ax.scatter([p["nodes"]], [p["ms"]], marker="*", s=90, color=color, edgecolor="black", linewidth=0.5,
                   zorder=5, label=f"{p['label']} ({p['ms']:.0f} ms)")
        if "delta_vs_published_adamw_pct" in p and p["strategy"] != "adamw":
            axd.scatter([p["nodes"]], [p["delta_vs_published_adamw_pct"]], marker="*", s=90, color=color,
                        edgecolor="black", linewidth=0.5, zorder=5,
                        label=f"{p['label']} ({p['delta_vs_published_adamw_pct']:+.1f}%)")
    for a in (ax, axd):
        a.set_xscale("log", base=2)
        a.set_xlabel("nodes")
        a.grid(True, which="both", alpha=0.3)
        nodes = sorted({n for line in s["strategies"].values() for n in line["nodes"]} |
                       {p["nodes"] for p in s["published"]})
        a.set_xticks(nodes)
        a.set_xticklabels([str(n) for n in nodes])
    ax.set_ylabel("step time (ms)")
    ax.set_title(f"predicted step time ({os.path.basename(s['file'])})")
    ax.legend(fontsize=6.5, loc="best")
    axd.axhline(0, color="black", linewidth=0.8, linestyle="--")
    axd.set_ylabel("vs AdamW (%)")
    axd.set_title("overhead over AdamW")
    if axd.lines or axd.collections:
        axd.legend(fontsize=6.5, loc="best")
    fig.tight_layout()
    return fig


def draw_breakdown(s):
    names = list(s["strategies"])
    fig, ax = plt.subplots(figsize=(1.2 * len(names) + 2.5, 3.6))
    bottom = [0.0] * len(names)
    for key, label, color in (("fwd_bwd_compute_ms", "forward+backward compute", "tab:gray"),
                              ("exposed_comm_ms", "exposed communication", "tab:blue"),
                              ("optimizer_compute_ms", "optimizer compute", "tab:orange")):
        values = [s["strategies"][n][key] for n in names]
        ax.bar(names, values, bottom=bottom, color=color, label=label, width=0.6)
        bottom = [b + v for b, v in zip(bottom, values)]
    for i, n in enumerate(names):
        ax.text(i, s["strategies"][n]["step_ms"], f"{s['strategies'][n]['step_ms']:.0f}", ha="center",
                va="bottom", fontsize=7)
    ax.set_ylabel("ms per step")
    title = s["title"] + (f" ({s['sweep_value']})" if s["sweep_value"] else "")
    ax.set_title(f"where the step goes: {title}")
    ax.legend(fontsize=7, loc="upper left")
    ax.margins(y=0.12)
    fig.tight_layout()
    return fig


def draw_owners(s):
    fig, ax = plt.subplots(figsize=(max(4.0, 0.35 * len(s.get("ranks", [])) + 2.5), 3.4))
    if not s["per_rank"]:
        names = list(s["owner_imbalance"])
        ax.bar(names, [100 * s["owner_imbalance"][n] for n in names],
               color=[STRATEGY_COLOR.get(n, "gray") for n in names])
        ax.set_ylabel("owner imbalance, max/mean - 1 (%)")
        ax.set_title("owners' NS load (dmuon-sim: no per-rank times in its JSON)", fontsize=8)
    else:
        ranks = [str(r) for r in s["ranks"]]
        ax.bar(ranks, s["compute_ms"], color="lightgray", label="all optimizer compute", width=0.8)
        ax.bar(ranks, s["ns_ms"], color=STRATEGY_COLOR.get(s["strategy"], "tab:green"), label="Newton-Schulz",
               width=0.5)
        mean = sum(s["ns_ms"]) / len(s["ns_ms"])
        ax.axhline(mean, color="black", linestyle="--", linewidth=0.8, label=f"NS mean {mean:.1f} ms")
        ax.set_xlabel("rank")
        ax.set_ylabel("ms per step (measured)")
        ax.set_title(f"{s['strategy']} on {s['machine']}: NS per rank, imbalance {100 * s['imbalance']:.1f}%")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def draw_parity(s):
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    labels = [f["label"] for f in s["files"]]
    markers = ["o", "s", "^", "D", "v", "P", "X", "<", ">"]
    colors = plt.get_cmap("tab10")
    placed = []
    for i, label in enumerate(dict.fromkeys(labels)):
        pts = [p for p in s["points"] if p["file"] == label]
        if not pts:
            continue
        ax.scatter([p["measured_ms"] for p in pts], [p["predicted_ms"] for p in pts], s=22,
                   marker=markers[i % len(markers)], color=colors(i % 10), label=label, zorder=3)
        for p in pts if s.get("labels", True) else []:
            # A label that would print over an earlier one (same height, within 2x left or right) moves down.
            key = (math.log10(p["measured_ms"]), math.log10(p["predicted_ms"]))
            near = sum(abs(key[0] - a) < 0.3 and abs(key[1] - b) < 0.03 for a, b in placed)
            placed.append(key)
            ax.annotate(f"{p['strategy']}/{p['quantity']}", (p["measured_ms"], p["predicted_ms"]),
                        xytext=(4, 2 - 6 * near), textcoords="offset points", fontsize=4.5, color=colors(i % 10))
    values = [v for p in s["points"] for v in (p["measured_ms"], p["predicted_ms"])]
    lo, hi = min(values) / 1.5, max(values) * 1.5
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8, label="predicted = measured")
    ax.fill_between([lo, hi], [0.9 * lo, 0.9 * hi], [1.1 * lo, 1.1 * hi], color="tab:green", alpha=0.15,
                    label="+-10%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("measured (ms)")
    ax.set_ylabel("predicted by dmuon-sim (ms)")
    counts = []
    for label in dict.fromkeys(labels):
        pts = [p for p in s["points"] if p["file"] == label]
        counts.append(f"{label} {sum(abs(p['rel_error']) <= 0.1 for p in pts)}/{len(pts)}")
    ax.set_title("within 10%: " + ", ".join(counts), fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


def draw_kernels(s):
    shapes = s["shapes"]
    fig, (ax, axm) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [4, 1]})
    presets = sorted({p for sh in shapes for p in list(sh["speedup_batch1"]) + list(sh["speedup_batched"])},
                     key=lambda p: (p != "dmuon", p))
    bars = [(p, b) for p in presets for b in ("speedup_batch1", "speedup_batched")]
    width = 0.8 / len(bars)
    x = list(range(len(shapes)))
    palette = {("dmuon", "speedup_batch1"): "tab:green", ("dmuon", "speedup_batched"): "yellowgreen",
               ("torch", "speedup_batch1"): "tab:blue", ("torch", "speedup_batched"): "lightsteelblue"}
    for k, (preset, kind) in enumerate(bars):
        values = [sh[kind].get(preset, 0.0) for sh in shapes]
        label = f"{preset} preset, {'batch 1' if kind == 'speedup_batch1' else 'model batch'}"
        ax.bar([i + (k - (len(bars) - 1) / 2) * width for i in x], values, width=width, label=label,
               color=palette.get((preset, kind)))
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{sh['shape']}\n{'+'.join(sh['models'])}" for sh in shapes], fontsize=6)
    ax.set_yscale("log")
    ax.set_ylabel("speedup over torch NS (x)")
    ax.set_title(f"Newton-Schulz per shape ({s['gpu']})")
    ax.legend(fontsize=6.5)
    models = list(s["models"])
    for k, preset in enumerate(presets):
        values = [s["models"][m]["geomean_speedup_batch1"].get(preset, 0.0) for m in models]
        axm.bar([i + (k - (len(presets) - 1) / 2) * 0.35 for i in range(len(models))], values, width=0.35,
                color=palette.get((preset, "speedup_batch1")), label=f"{preset} preset")
    axm.axhline(1, color="black", linewidth=0.8)
    axm.set_xticks(range(len(models)))
    axm.set_xticklabels(models, fontsize=6.5, rotation=20)
    axm.set_title("geomean per model, batch 1")
    axm.legend(fontsize=6.5)
    fig.tight_layout()
    return fig


# --- command line ----------------------------------------------------------------------------

def build_parser():
    ap = argparse.ArgumentParser(prog="plot.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="plot", required=True)

    def common(p):
        p.add_argument("--out", help="output prefix: PREFIX.png, PREFIX.svg (default: the plot's name)")
        p.add_argument("--format", default="png,svg", help="comma-separated: png, svg (default png,svg)")
        p.add_argument("--series", help="also write the plotted series as JSON to this file")
        return p

    p = common(sub.add_parser("scaling", help="step ms against nodes per strategy (a --sweep nodes=... JSON)"))
    p.add_argument("json")
    p.add_argument("--published", action="append", default=[], metavar="nodes=N,strategy=S,ms=X[,label=T]")
    p.add_argument("--published-from", metavar="FILE", help="reports/sim-validation.json: its a800_published rows")
    p.add_argument("--published-nodes", type=int, help="node count of the --published-from rows")
    p = common(sub.add_parser("breakdown", help="stacked fwd+bwd / exposed comm / optimizer per strategy"))
    p.add_argument("json")
    p.add_argument("--run", type=int, help="index into runs[] (default: the last run)")
    p.add_argument("--sweep-value", help="the run whose sweep_value is this, e.g. nodes=16")
    p = common(sub.add_parser("owners", help="NS ms per rank for one strategy (dmuon-bench step JSON)"))
    p.add_argument("json")
    p.add_argument("--strategy", help="default: dedicated if present, else the first")
    p = common(sub.add_parser("parity", help="predicted vs measured of dmuon-sim --validate JSON files"))
    p.add_argument("json", nargs="+")
    p.add_argument("--no-labels", action="store_true", help="no strategy/quantity label per point (many points)")
    p = common(sub.add_parser("kernels", help="NS speedup over torch per shape and model (dmuon-bench kernels)"))
    p.add_argument("json")
    return ap


def series_for(args):
    if args.plot == "scaling":
        doc = load_json(args.json)
        published = [parse_published(t) for t in args.published]
        if args.published_from:
            files = {r.get("file", "") for r in sim_runs(doc, args.json) if isinstance(r, dict)}
            published += published_from(args.published_from, sorted(files)[0], args.published_nodes)
        return scaling_series(doc, args.json, published), draw_scaling
    if args.plot == "breakdown":
        return breakdown_series(load_json(args.json), args.json, args.run, args.sweep_value), draw_breakdown
    if args.plot == "owners":
        return owners_series(load_json(args.json), args.json, args.strategy), draw_owners
    if args.plot == "parity":
        series = parity_series([(p, load_json(p)) for p in args.json])
        series["labels"] = not args.no_labels
        return series, draw_parity
    return kernels_series(load_json(args.json), args.json), draw_kernels


def main(argv=None):
    args = build_parser().parse_args(argv)
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    bad = [f for f in formats if f not in ("png", "svg")]
    if bad or not formats:
        print(f"plot.py: --format {args.format}: expected png and/or svg", file=sys.stderr)
        return 2
    try:
        series, draw = series_for(args)
    except PlotError as e:
        print(f"plot.py {args.plot}: {e}", file=sys.stderr)
        return 2
    if series.get("note"):
        print(f"plot.py {args.plot}: {series['note']}", file=sys.stderr)
    written = save(draw(series), args.out or args.plot, formats)
    if args.series:
        with open(args.series, "w", encoding="utf-8") as f:
            json.dump({"plot": args.plot, "outputs": written, "series": series}, f, indent=1)
            f.write("\n")
    print(f"plot.py {args.plot}: wrote {', '.join(written)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
