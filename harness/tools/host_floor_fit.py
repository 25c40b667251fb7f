"""The arithmetic of the host floor (measure_host_floor.py), apart so that it runs without torch
or yaml (tests/test_floor_tools.py): the depths a model's floor is timed at, the slope fitted
over the runs, and one floor from several processes' floors."""

import statistics

LAYER_COUNTS = (2, 6, 12)


def floor_depths(model_layers):
    """LAYER_COUNTS below the model's own depth, then its own (a deeper model is not this model);
    a 2-layer model is timed at 1 and 2 layers; a 1-layer model gives no slope: (1,)."""
    counts = tuple(sorted({n for n in LAYER_COUNTS if n < model_layers} | {model_layers}))[:len(LAYER_COUNTS)]
    return (1, model_layers) if len(counts) < 2 and model_layers > 1 else counts


def least_squares(runs):
    """Slope and intercept of seconds against depth over the (depth, seconds) runs."""
    mx = statistics.fmean(n for n, _ in runs)
    my = statistics.fmean(t for _, t in runs)
    slope = sum((n - mx) * (t - my) for n, t in runs) / sum((n - mx) ** 2 for n, _ in runs)
    return slope, my - slope * mx


def median_over_processes(processes):
    """One host_floor list from the lists several processes measured (measure_host_floor.py's
    entries, the same depths per mode): per mode and depth the median of the processes' times,
    the line fitted through those medians. A process's host runs at its own pace (by 10-20% on
    the GPU machines, reports/sim-validation.md section 0, stop 40), which one process's repeats
    cannot average out. A mode is kept where every process measured it at the same depths and
    the fitted slope is positive; the first process's entry gives the other fields."""
    if not processes:
        raise ValueError("no process measured a host floor")
    out = []
    for entry in processes[0]:
        same = [e for p in processes for e in p if e["mode"] == entry["mode"]]
        if len(same) != len(processes) or any(e["layers"] != entry["layers"] for e in same):
            continue
        times = [statistics.median(e["fwd_bwd_s"][i] for e in same) for i in range(len(entry["layers"]))]
        per_layer, per_step = least_squares(list(zip(entry["layers"], times)))
        if per_layer <= 0:
            continue
        out.append(dict(entry, fwd_bwd_s=times, per_layer_s=per_layer, per_step_s=per_step))
    return out
