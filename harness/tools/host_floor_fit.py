"""The arithmetic of the host floor (measure_host_floor.py), apart so that it runs without torch
or yaml (tests/test_floor_tools.py): the depths a model's floor is timed at, and the slope fitted
over the runs."""

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
