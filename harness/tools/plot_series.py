"""Reading the JSON plot.py draws: every series as plain data, checked field by field.

Split from plot.py (which draws and parses the command line) so that each file has one concern.
Each function raises PlotError with one message naming the file and the field.
"""

import json
import math
import os

STRATEGY_ORDER = ["adamw", "ddp-redundant", "fsdp-gather", "zero1-a2a", "dedicated", "owner-striped"]


class PlotError(Exception):
    """One message naming the file and the field; main() prints it and exits 2."""


# --- reading -----------------------------------------------------------------------------------

def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise PlotError(f"{path}: cannot read ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise PlotError(f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None


def field(obj, key, path, where, kind=None):
    """obj[key], checked: `where` is the JSON path of obj, used in the error message."""
    name = f"{where}.{key}" if where else key
    if not isinstance(obj, dict):
        raise PlotError(f"{path}: field '{where or '(top level)'}' is not an object")
    if key not in obj:
        raise PlotError(f"{path}: missing field '{name}'")
    value = obj[key]
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise PlotError(f"{path}: field '{name}' is not a finite number ({value!r})")
    elif kind == "list":
        if not isinstance(value, list):
            raise PlotError(f"{path}: field '{name}' is not a list")
    elif kind == "string":
        if not isinstance(value, str):
            raise PlotError(f"{path}: field '{name}' is not a string")
    return value


def ordered(strategies):
    known = [s for s in STRATEGY_ORDER if s in strategies]
    return known + sorted(s for s in strategies if s not in STRATEGY_ORDER)


def sim_runs(doc, path):
    runs = field(doc, "runs", path, "", "list")
    if not runs:
        raise PlotError(f"{path}: field 'runs' is empty")
    return runs


def simulated_strategies(run, path, where):
    """(name, entry, where) of every simulated strategy of one run."""
    out = []
    for k, s in enumerate(field(run, "strategies", path, where, "list")):
        w = f"{where}.strategies[{k}]"
        name = field(s, "strategy", path, w, "string")
        if field(s, "simulated", path, w) is True:
            out.append((name, s, w))
    return out


# --- series: what each plot draws, as plain data ---------------------------------------------

def parse_published(text):
    """'nodes=16,strategy=dedicated,ms=1285[,label=...]' -> dict."""
    entry = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in ("nodes", "strategy", "ms", "label"):
            raise PlotError(f"--published '{text}': expected nodes=N,strategy=S,ms=X[,label=TEXT]")
        entry[key.strip()] = value.strip()
    for key in ("nodes", "strategy", "ms"):
        if key not in entry:
            raise PlotError(f"--published '{text}': missing {key}=")
    try:
        entry["nodes"] = int(entry["nodes"])
        entry["ms"] = float(entry["ms"])
    except ValueError:
        raise PlotError(f"--published '{text}': nodes must be an integer and ms a number") from None
    if entry["nodes"] <= 0 or not entry["ms"] > 0:
        raise PlotError(f"--published '{text}': nodes and ms must be positive")
    entry.setdefault("label", f"published {entry['strategy']}")
    return entry


def published_from(path, scenario_file, nodes):
    """Published total-step rows of reports/sim-validation.json for one scenario file."""
    doc = load_json(path)
    block = field(doc, "a800_published", path, "")
    out = []
    for k, row in enumerate(field(block, "rows", path, "a800_published", "list")):
        w = f"a800_published.rows[{k}]"
        if row.get("scenario") != scenario_file or row.get("quantity") != "total_step":
            continue
        n = row.get("nodes", nodes)
        if n is None:
            raise PlotError(f"{path}: field '{w}.nodes' is missing; give the node count with --published-nodes")
        seconds = field(row, "published_seconds", path, w, "number")
        out.append({"nodes": int(n), "strategy": field(row, "strategy", path, w, "string"), "ms": seconds * 1e3,
                    "label": f"published {row.get('published_column', row['strategy'])}"})
    if not out:
        raise PlotError(f"{path}: no a800_published row with scenario '{scenario_file}' and quantity total_step")
    return out


def scaling_series(doc, path, published=()):
    runs = sim_runs(doc, path)
    lines, nodes_seen, files = {}, {}, set()
    for i, run in enumerate(runs):
        w = f"runs[{i}]"
        nodes = field(run, "nodes", path, w, "number")
        label = run.get("sweep_value", "")
        if nodes in nodes_seen:
            raise PlotError(f"{path}: field '{w}.nodes' repeats {nodes} (runs '{nodes_seen[nodes]}' and "
                            f"'{label}'): scaling needs a --sweep nodes=... JSON")
        nodes_seen[nodes] = label
        files.add(run.get("file", ""))
        for name, s, sw in simulated_strategies(run, path, w):
            ms = field(s, "step_seconds", path, sw, "number") * 1e3
            lines.setdefault(name, []).append((int(nodes), ms))
    if not lines:
        raise PlotError(f"{path}: no simulated strategy in any run")
    series = {"file": path, "scenario_file": sorted(files)[0] if len(files) == 1 else "", "strategies": {},
              "published": list(published)}
    for name in ordered(lines):
        pts = sorted(lines[name])
        series["strategies"][name] = {"nodes": [n for n, _ in pts], "step_ms": [m for _, m in pts]}
    adamw = series["strategies"].get("adamw")
    if adamw:
        ref = dict(zip(adamw["nodes"], adamw["step_ms"]))
        for name, s in series["strategies"].items():
            s["delta_vs_adamw_pct"] = [100 * (m / ref[n] - 1) if n in ref else None
                                       for n, m in zip(s["nodes"], s["step_ms"])]
        pub_adamw = {p["nodes"]: p["ms"] for p in published if p["strategy"] == "adamw"}
        for p in series["published"]:
            if p["nodes"] in pub_adamw:
                p["delta_vs_published_adamw_pct"] = 100 * (p["ms"] / pub_adamw[p["nodes"]] - 1)
    return series


def pick_run(doc, path, index=None, sweep_value=None):
    runs = sim_runs(doc, path)
    if sweep_value is not None:
        hits = [i for i, r in enumerate(runs) if r.get("sweep_value") == sweep_value]
        if not hits:
            values = [r.get("sweep_value", "") for r in runs]
            raise PlotError(f"{path}: no run with sweep_value '{sweep_value}' (runs: {values})")
        index = hits[0]
    if index is None:
        index = len(runs) - 1
    if not -len(runs) <= index < len(runs):
        raise PlotError(f"{path}: --run {index} out of range ({len(runs)} runs)")
    return index % len(runs), runs[index]


def breakdown_series(doc, path, index=None, sweep_value=None):
    i, run = pick_run(doc, path, index, sweep_value)
    w = f"runs[{i}]"
    out = {"file": path, "run": i, "sweep_value": run.get("sweep_value", ""),
           "title": f"{run.get('scenario', '?')}: {run.get('nodes', '?')} x {run.get('gpus_per_node', '?')} "
                    f"{run.get('gpu', '')}", "strategies": {}}
    for name, s, sw in simulated_strategies(run, path, w):
        compute, exposed, optimizer, step = (field(s, key, path, sw, "number") * 1e3 for key in (
            "fwd_bwd_compute_seconds", "exposed_comm_seconds", "optimizer_seconds", "step_seconds"))
        # The simulator's exposed communication is the step minus the compute stream's busy time
        # (sim/strategy_run.cpp), so it already holds the optimizer phase's exposed collectives,
        # which optimizer_seconds (the phase's wall time) holds too. Stacking the three reported
        # numbers would count those twice (fsdp-gather: 58 ms on 16node); the optimizer's bar is
        # the rest of the step instead, and the three bars sum to step_seconds.
        out["strategies"][name] = {"fwd_bwd_compute_ms": compute, "exposed_comm_ms": exposed,
                                   "optimizer_compute_ms": step - compute - exposed, "step_ms": step,
                                   "optimizer_ms_reported": optimizer}
    if not out["strategies"]:
        raise PlotError(f"{path}: {w} has no simulated strategy")
    out["strategies"] = {k: out["strategies"][k] for k in ordered(out["strategies"])}
    return out


def owners_series(doc, path, strategy=None):
    if "runs" in doc:  # a dmuon-sim JSON: no per-rank data, only the owners' imbalance
        i, run = pick_run(doc, path)
        rows = {name: field(s, "owner_imbalance", path, sw, "number")
                for name, s, sw in simulated_strategies(run, path, f"runs[{i}]")}
        return {"file": path, "source": "dmuon-sim", "per_rank": False,
                "note": "dmuon-sim JSON holds no per-rank NS times; plotted: owner_imbalance (max/mean - 1) per strategy",
                "owner_imbalance": {k: rows[k] for k in ordered(rows)}}
    entries = field(doc, "strategies", path, "", "list")
    by_name = {}
    for k, s in enumerate(entries):
        by_name[field(s, "strategy", path, f"strategies[{k}]", "string")] = (k, s)
    if strategy is None:
        strategy = "dedicated" if "dedicated" in by_name else next(iter(by_name), None)
    if strategy not in by_name:
        raise PlotError(f"{path}: no strategy '{strategy}' (has {sorted(by_name)})")
    k, s = by_name[strategy]
    w = f"strategies[{k}]"
    ranks = field(s, "ranks", path, w, "list")
    if not ranks:
        raise PlotError(f"{path}: field '{w}.ranks' is empty")
    ns = [field(r, "ns_busy_seconds", path, f"{w}.ranks[{j}]", "number") * 1e3 for j, r in enumerate(ranks)]
    compute = [field(r, "compute_busy_seconds", path, f"{w}.ranks[{j}]", "number") * 1e3 for j, r in enumerate(ranks)]
    rank_ids = [int(r.get("rank", j)) for j, r in enumerate(ranks)]
    mean = sum(ns) / len(ns)
    return {"file": path, "source": "dmuon-bench step", "per_rank": True, "strategy": strategy,
            "machine": doc.get("machine", ""), "ranks": rank_ids, "ns_ms": ns, "compute_ms": compute,
            "imbalance": max(ns) / mean - 1 if mean > 0 else 0.0}


def parity_series(docs):
    """docs: [(path, doc)]; one point per row in seconds."""
    out = {"files": [], "points": [], "skipped_units": {}, "skipped_nonpositive": 0}
    for path, doc in docs:
        rows = field(doc, "rows", path, "", "list")
        # Two reports of one machine (e.g. with and without --calibration) differ only in the
        # file name: that names the points, the machine stays in the series.
        label = os.path.splitext(os.path.basename(path))[0].replace("sim-validation-", "")
        machine = doc.get("machine", label) if isinstance(doc, dict) else label
        out["files"].append({"file": path, "machine": machine, "label": label})
        for k, row in enumerate(rows):
            w = f"rows[{k}]"
            if not isinstance(row, dict):
                raise PlotError(f"{path}: field '{w}' is not an object")
            unit = row.get("unit", "s")
            if unit not in ("s", "seconds"):
                out["skipped_units"][unit] = out["skipped_units"].get(unit, 0) + 1
                continue
            pred_key = "predicted" if "predicted" in row else "predicted_seconds"
            meas_key = "measured" if "measured" in row else "measured_seconds"
            pred = field(row, pred_key, path, w, "number")
            meas = field(row, meas_key, path, w, "number")
            if pred <= 0 or meas <= 0:  # no place on a log axis
                out["skipped_nonpositive"] += 1
                continue
            out["points"].append({"file": label, "machine": machine, "strategy": field(row, "strategy", path, w, "string"),
                                  "quantity": field(row, "quantity", path, w, "string"),
                                  "predicted_ms": pred * 1e3, "measured_ms": meas * 1e3,
                                  "rel_error": pred / meas - 1})
    if not out["points"]:
        raise PlotError(f"{', '.join(p for p, _ in docs)}: no row in seconds to plot")
    return out


def kernels_series(doc, path):
    rows = field(doc, "rows", path, "", "list")
    shapes = {}  # (rows, cols) -> {"models": [...], (preset, batched): speedup}
    for k, r in enumerate(rows):
        w = f"rows[{k}]"
        if not isinstance(r, dict):
            raise PlotError(f"{path}: field '{w}' is not an object")
        if "speedup_vs_torch" not in r:  # no torch baseline for this row
            continue
        key = (int(field(r, "rows", path, w, "number")), int(field(r, "cols", path, w, "number")))
        preset = field(r, "preset", path, w, "string")
        batch = int(field(r, "batch", path, w, "number"))
        speedup = field(r, "speedup_vs_torch", path, w, "number")
        entry = shapes.setdefault(key, {"models": field(r, "models", path, w, "list"), "batch1": {}, "batched": {}})
        if batch == 1:
            entry["batch1"][preset] = speedup
        elif batch >= entry["batched"].get(preset, (0, 0))[0]:
            entry["batched"][preset] = (batch, speedup)
    if not shapes:
        raise PlotError(f"{path}: no row has speedup_vs_torch (run dmuon-bench kernels with --torch-json)")
    out = {"file": path, "gpu": doc.get("gpu", ""), "shapes": [], "models": {}}
    for (r, c), e in shapes.items():
        out["shapes"].append({"shape": f"{r}x{c}", "models": e["models"], "speedup_batch1": e["batch1"],
                              "speedup_batched": {p: s for p, (_, s) in e["batched"].items()},
                              "batched_batch": {p: b for p, (b, _) in e["batched"].items()}})
    for s in out["shapes"]:
        for model in s["models"]:
            m = out["models"].setdefault(model, {"shapes": 0, "log_sum": {}})
            m["shapes"] += 1
            for preset, v in s["speedup_batch1"].items():
                m["log_sum"][preset] = m["log_sum"].get(preset, 0.0) + math.log(v)
    for model, m in out["models"].items():
        m["geomean_speedup_batch1"] = {p: math.exp(v / m["shapes"]) for p, v in m.pop("log_sum").items()}
    return out
