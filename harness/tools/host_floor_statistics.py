#!/usr/bin/env python3
"""Does a different statistic of the FSDP2 floor runs predict the host-bound FSDP2 steps better?

For every lease with both FSDP2 floor runs (fsdp2_step.py at 32 tokens, the calibration model at two
depths: floor-half.json, floor-full.json) and FSDP2 + AdamW steps (fsdp2-*.json), refits the
calibration's fsdp2 host_floor line from each run's per-iteration times with the median (what
world_host_floor.py gives, the calibrations' floor until stop 42), the lower quartile and the minimum (host hiccups only ever add time),
and prints `dmuon-sim --validate`'s FSDP2 error for each step. A fourth line, "one-rank", puts the
same lease's one-rank FSDP2 floor (measure_layers.py's, on one GPU without collectives, re-derived
from the floor folder's run.log by one_rank_floor.py) in place of the 2-GPU line: what the
calibrations use since stop 42. Analysis only: writes nothing but a
temporary calibration. Run from the repository root after building dmuon-sim:

    /usr/bin/python3 harness/tools/host_floor_statistics.py [--sim build/harness/dmuon-sim]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

import one_rank_floor  # harness/tools/, beside this script

# (label, calibration file, folder of its floor runs, folder of the FSDP2 steps)
LEASES = [
    ("2xh200 01:02", "scenarios/calibration/h200.yaml", "reports/measured/2xh200/calibrate-2026-11-26",
     "reports/measured/2xh200"),
    ("2xh200 01:40", "reports/measured/2xh200/lease-2026-11-26-0140/calibrate/h200.yaml",
     "reports/measured/2xh200/lease-2026-11-26-0140/calibrate", "reports/measured/2xh200/lease-2026-11-26-0140"),
    ("2xh100 15:15", "reports/measured/2xh100/calibrate-2026-11-26-1515/h100-sxm-x2.yaml",
     "reports/measured/2xh100/calibrate-2026-11-26-1515", "reports/measured/2xh100/fsdp2-2026-11-26-1520"),
    ("2xh100 13:27 (FSDP2 15:03)", "reports/measured/2xh100/lease-2026-11-26-1327/calibrate/h100-sxm-x2.yaml",
     "reports/measured/2xh100/lease-2026-11-26-1327/calibrate", "reports/measured/2xh100/lease-2026-11-26-1327/fsdp2-1503"),
    # Stop 34's 2 x H100 calibration: its own floor runs, the 15:15 lease's FSDP2 steps.
    ("2xh100 21:49 (FSDP2 15:15)", "reports/measured/2xh100/lease-2026-11-26-2149/calibrate/h100-sxm-x2.yaml",
     "reports/measured/2xh100/lease-2026-11-26-2149/calibrate", "reports/measured/2xh100/fsdp2-2026-11-26-1520"),
    # Stop 35's: calibration, floor runs and FSDP2 steps of one lease.
    ("2xh100 00:42", "reports/measured/2xh100/lease-2026-11-27-0042/calibrate/h100-sxm-x2.yaml",
     "reports/measured/2xh100/lease-2026-11-27-0042/calibrate", "reports/measured/2xh100/lease-2026-11-27-0042/fsdp2"),
    # Stop 42's: the same, each floor depth and each step the median of three processes. The
    # committed file since stop 46 (lease 2026-11-28 00:55) ran no 2-GPU floor runs, so it has no line here.
    ("2xh100 16:38", "reports/measured/2xh100/lease-2026-11-27-1638/calibrate/h100-sxm-x2.yaml",
     "reports/measured/2xh100/lease-2026-11-27-1638/calibrate", "reports/measured/2xh100/lease-2026-11-27-1638/fsdp2"),
]


def statistic(values, how):
    xs = sorted(values)
    if how == "median":
        return statistics.median(xs)
    if how == "q25":
        return statistics.quantiles(xs, n=4)[0]
    return xs[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", default="build/harness/dmuon-sim")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        calibration = os.path.join(tmp, "calibration.yaml")
        for label, cal, floors, steps in LEASES:
            runs = [json.load(open(os.path.join(floors, f"floor-{d}.json"))) for d in ("half", "full")]
            text = open(cal).read()
            log = os.path.join(floors, "run.log")
            with open(log) as f:
                log_text = f.read()
            # a machine folder names the steps fsdp2-<scenario>.json; a lease's fsdp2/ folder
            # (device_validate.sh) <scenario>.json
            lease_folder = os.path.basename(os.path.normpath(steps)) == "fsdp2"
            for how in ("median", "q25", "min", "one-rank"):
                try:
                    if how == "one-rank":
                        layers, times, per_layer, per_step, _ = one_rank_floor.from_log(log_text, log)
                        world = 1
                    else:
                        (a, ta), (b, tb) = [(r["num_layers"], statistic([x[0] for x in r["per_iteration_seconds"]], how))
                                            for r in runs]
                        layers, times, world = [a, b], [ta, tb], runs[1]["world"]
                        per_layer = (tb - ta) / (b - a)
                        per_step = tb - per_layer * b
                    changed, _ = one_rank_floor.replace_fsdp2_row(text, cal, layers, times, per_layer, per_step,
                                                                  world=world)
                except one_rank_floor.FloorError as e:
                    print(f"{label:28s} {how:8s} {e}")
                    continue
                open(calibration, "w").write(changed)
                cells = []
                for f in sorted(os.listdir(steps)):
                    if not f.endswith(".json") or not (f.startswith("fsdp2-") or lease_folder):
                        continue
                    config = f[:-len(".json")].removeprefix("fsdp2-")
                    r = subprocess.run([args.sim, "--scenario", f"scenarios/validation/{config}.yaml", "--calibration",
                                        calibration, "--validate", os.path.join(steps, f)], capture_output=True, text=True)
                    m = re.search(r"fwd\+bwd \(FSDP2 \+ AdamW\)\s+\S+\s+\S+\s+ms\s+(\S+)", r.stdout)
                    cells.append(f"{config.split('-torch')[0]} {m.group(1) if m else 'FAILED: ' + r.stderr.strip()[:60]}")
                print(f"{label:28s} {how:8s} floor {per_layer * 1e3:.2f} ms a layer {per_step * 1e3:+6.1f} ms | " + "; ".join(cells))


if __name__ == "__main__":
    main()
