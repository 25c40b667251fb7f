"""The arithmetic of the host floor (measure_host_floor.py), apart so that it runs without torch
or yaml (tests/test_floor_tools.py): the depths a model's floor is timed at, the slope fitted
over the runs, and one floor from several processes' floors."""

import statistics

LAYER_COUNTS = (2, 6, 12)


def floor_depths(model_layers):
    """LAYER_COUNTS below the model's own depth, then its own (a deeper model is not this model);
    a 2-layer model is timed at 1 and 2 layers; a 1-layer model gives no slope: (1,).
    The model's own depth is kept above 12 layers too (36 for Qwen2.5-3B): a slope over 2-12
    layers rests on 10 layers' time, and the 12-layer point read 38.0 and 47.0 ms on two 1 x H100
    leases of 2026-11-27 (floor 2.87 and 3.82 ms a layer) while the 2- and 6-layer points agreed
    within 2%; the validated models run 24-36 layers, where the whole model sits."""
    counts = tuple(sorted({n for n in LAYER_COUNTS if n < model_layers} | {model_layers}))
    return (1, model_layers) if len(counts) < 2 and model_layers > 1 else counts


def least_squares(runs):
    """Slope and intercept of seconds against depth over the (depth, seconds) runs."""
    mx = statistics.fmean(n for n, _ in runs)
    my = statistics.fmean(t for _, t in runs)
    slope = sum((n - mx) * (t - my) for n, t in runs) / sum((n - mx) ** 2 for n, _ in runs)
    return slope, my - slope * mx


def fit_runs(runs):
    """One floor from the (depth, seconds) runs of one process, every depth visited once or more:
    (the depths ascending, each depth's mean over its visits, per-layer slope, intercept), the slope
    fitted over every run (measure_host_floor.measure; one_rank_floor.py from a call's log)."""
    depths = sorted({n for n, _ in runs})
    per_layer, per_step = least_squares(runs)
    means = [statistics.fmean(t for n, t in runs if n == d) for d in depths]
    return depths, means, per_layer, per_step


def median_over_processes(processes):
    """One host_floor list from the lists several processes measured (measure_host_floor.py's
    entries): per mode and depth the median of the processes' times, the line fitted through those
    medians. A process's host runs at its own pace (by 10-20% on the GPU machines,
    reports/sim-validation.md section 0, stop 40), which one process's repeats cannot average out.
    A mode takes the processes that measured it at the depths of the first that did (a process
    whose FSDP2 could not start still counts for eager); it is kept where the fitted slope is
    positive. That first entry gives the other fields."""
    if not processes:
        raise ValueError("no process measured a host floor")
    out, modes = [], []
    for p in processes:
        for e in p:
            if e["mode"] not in modes:
                modes.append(e["mode"])
    for mode in modes:
        same = [e for p in processes for e in p if e["mode"] == mode]
        first = same[0]
        same = [e for e in same if e["layers"] == first["layers"]]
        times = [statistics.median(e["fwd_bwd_s"][i] for e in same) for i in range(len(first["layers"]))]
        per_layer, per_step = least_squares(list(zip(first["layers"], times)))
        if per_layer <= 0:
            continue
        out.append(dict(first, fwd_bwd_s=times, per_layer_s=per_layer, per_step_s=per_step))
    return out
