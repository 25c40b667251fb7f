"""Stop 46 experiment (not adopted): the fsdp2 host floor row of each 2 x H100 lease's calibration scaled by
the calibration model's own two-rank FSDP2 host time over the one-rank line at its depth, then
`dmuon-sim --validate` on the lease's unseen FSDP2 reports, before -> after. Leases without host times in
their FSDP2 reports are left out. The row is found and rewritten by harness/tools/one_rank_floor.py.
Run from the repository root after building dmuon-sim:
    /usr/bin/python3 reports/measured/2xh100/lease-2026-11-28-0055/fsdp2-host-scale.py > .../fsdp2-host-scale.txt
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, "harness/tools")
import one_rank_floor  # noqa: E402

SIM = "build/harness/dmuon-sim"
UNSEEN = ["qwen2.5-1.5b", "llama3.2-3b"]
# (label, calibration, the lease's fsdp2 folder: <model>-torch-2xh100.json)
LEASES = [
    ("2xh100 00:55", "scenarios/calibration/h100-sxm-x2.yaml", "reports/measured/2xh100/lease-2026-11-28-0055/fsdp2"),
    ("2xh100 16:38", "reports/measured/2xh100/lease-2026-11-27-1638/calibrate/h100-sxm-x2.yaml",
     "reports/measured/2xh100/lease-2026-11-27-1638/fsdp2"),
    ("2xh100 00:42", "reports/measured/2xh100/lease-2026-11-27-0042/calibrate/h100-sxm-x2.yaml",
     "reports/measured/2xh100/lease-2026-11-27-0042/fsdp2"),
]


def fsdp2_row(text, path):
    """(layers, fwd_bwd_s, per_layer_s, per_step_s) of the calibration's one fsdp2 host_floor row."""
    rows = list(one_rank_floor.FSDP2_ROW.finditer(text))
    if len(rows) != 1:
        raise SystemExit(f"{path}: expected one fsdp2 host_floor row, found {len(rows)}")
    row = rows[0].group(0)
    lists = {k: re.search(k + r": \[([^\]]*)\]", row).group(1).split(", ") for k in ("layers", "fwd_bwd_s")}
    scalars = {k: float(re.search(k + r": ([-0-9.e]+)", row).group(1)) for k in ("per_layer_s", "per_step_s")}
    return ([int(n) for n in lists["layers"]], [float(t) for t in lists["fwd_bwd_s"]], scalars["per_layer_s"],
            scalars["per_step_s"])


def fsdp2_error(report, model, calibration):
    out = subprocess.run([SIM, "--validate", report, "--scenario", f"scenarios/validation/{model}-torch-2xh100.yaml",
                          "--calibration", calibration], capture_output=True, text=True).stdout
    return next(line.split()[-1] for line in out.splitlines() if "FSDP2" in line)


for label, cal, folder in LEASES:
    text = open(cal).read()
    layers, fwd_bwd, per_layer, per_step = fsdp2_row(text, cal)
    ref = json.load(open(os.path.join(folder, "qwen2.5-3b-torch-2xh100.json")))
    line = per_layer * ref["num_layers"] + per_step
    f = ref["host_fwd_bwd_seconds_median"] / line
    scaled, _ = one_rank_floor.replace_fsdp2_row(text, cal, layers, [t * f for t in fwd_bwd], per_layer * f,
                                                 per_step * f)
    with tempfile.TemporaryDirectory() as tmp:
        scaled_cal = os.path.join(tmp, "calibration.yaml")
        open(scaled_cal, "w").write(scaled)
        cells = []
        for m in UNSEEN:
            report = os.path.join(folder, f"{m}-torch-2xh100.json")
            cells.append(f"{m}: {fsdp2_error(report, m, cal)} -> {fsdp2_error(report, m, scaled_cal)}")
    print(f"{label}: factor {f:.3f} (host {1e3 * ref['host_fwd_bwd_seconds_median']:.1f} / line {1e3 * line:.1f}); "
          + "; ".join(cells))
