#!/usr/bin/env python3
"""FSDP2's host floor per decoder layer on all of a machine's GPUs, from two fsdp2_step.py runs of
the calibration model at 32 tokens: the model at two depths (fsdp2_step.py --num-layers), each
forward + backward under FSDP2 on every GPU (torchrun). The floor is the slope between them; the
intercept is what a step costs outside its layers.

Not what the calibrations use since 2026-11-27 (stop 42): they take measure_host_floor.py's one-rank
FSDP2 floor, which predicted the 2-GPU FSDP2 steps of seven leases better (harness/tools/
one_rank_floor.py says by how much and why). Until then device_calibrate.sh merged this one in its
place, because on one 2 x H200 lease the one-rank slope over 2 and 6 layers had read 3.36 ms a layer
where the FSDP2 steps took 8.3 a layer. It stays for the comparison (host_floor_statistics.py, with
device_calibrate.sh WORLD_FLOOR_RUNS=1) and for a calibration by hand:

    /usr/bin/python3 harness/tools/world_host_floor.py HALF.json FULL.json --merge-into layers.json

writes the entry into layers.json's "host_floor" list (measure_layers.py's file, which `dmuon-bench
calibrate --layers-json` reads), in place of its fsdp2 entry:
  {"model", "mode": "fsdp2", "micro_batch", "seq_len", "world", "layers": [a, b], "fwd_bwd_s": [ta, tb],
   "per_layer_s", "per_step_s"}
and prints it. Exit 1 with one line naming the file and field when the two runs are not the same
model, mode, shape and world at two different depths, or the slope is not positive (layers.json is
then left as it was).
"""

import argparse
import json
import sys

import json_file  # harness/tools/, beside this script


class FloorError(Exception):
    pass


def read_run(path):
    run = json_file.load(path, FloorError)
    if not isinstance(run, dict) or run.get("tool") != "fsdp2_step.py":
        raise FloorError(f"{path}: not an fsdp2_step.py report (tool)")
    for key in ("model", "mode", "world", "micro_batch", "seq_len", "num_layers", "fwd_bwd_seconds_median"):
        if key not in run:
            raise FloorError(f"{path}: {key}: missing")
    if run["mode"] != "fsdp2":
        raise FloorError(f"{path}: mode: expected fsdp2, got {run['mode']!r}")
    t = run["fwd_bwd_seconds_median"]
    if not isinstance(t, (int, float)) or not t > 0:
        raise FloorError(f"{path}: fwd_bwd_seconds_median: must be > 0, got {t!r}")
    return run


def floor_entry(half_path, full_path):
    runs = [read_run(half_path), read_run(full_path)]
    for key in ("model", "mode", "world", "micro_batch", "seq_len"):
        if runs[0][key] != runs[1][key]:
            raise FloorError(f"{full_path}: {key}: {runs[1][key]!r}, but {half_path} has {runs[0][key]!r}")
    runs.sort(key=lambda r: r["num_layers"])
    (a, ta), (b, tb) = ((r["num_layers"], r["fwd_bwd_seconds_median"]) for r in runs)
    if a == b:
        raise FloorError(f"{full_path}: num_layers: both runs have {a} layers; the slope needs two depths")
    per_layer = (tb - ta) / (b - a)
    if not per_layer > 0:
        raise FloorError(f"{full_path}: fwd_bwd_seconds_median: {b} layers took {tb} s, {a} layers {ta} s: "
                         "no positive slope")
    r = runs[1]
    return {"model": r["model"], "mode": "fsdp2", "micro_batch": r["micro_batch"], "seq_len": r["seq_len"],
            "world": r["world"], "layers": [a, b], "fwd_bwd_s": [ta, tb], "per_layer_s": per_layer,
            "per_step_s": ta - a * per_layer}


def merge(layers_path, entry):
    layers = json_file.load(layers_path, FloorError)
    if not isinstance(layers, dict):
        raise FloorError(f"{layers_path}: expected measure_layers.py's JSON object")
    floors = [f for f in layers.get("host_floor", []) if f.get("mode") != "fsdp2"]
    layers["host_floor"] = floors + [entry]
    with open(layers_path, "w") as f:
        json.dump(layers, f, indent=1)
        f.write("\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs=2, metavar="RUN.json", help="fsdp2_step.py --num-layers reports at two depths")
    p.add_argument("--merge-into", metavar="LAYERS.json", help="measure_layers.py JSON whose fsdp2 floor it replaces")
    a = p.parse_args(argv)
    try:
        entry = floor_entry(*a.runs)
        if a.merge_into:
            merge(a.merge_into, entry)
    except FloorError as e:
        print(f"world_host_floor.py: {e}", file=sys.stderr)
        return 1
    print(json.dumps(entry))
    return 0


if __name__ == "__main__":
    sys.exit(main())
