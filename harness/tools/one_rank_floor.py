#!/usr/bin/env python3
"""FSDP2's one-rank host floor of a calibration call, re-derived from the call's log, put into the
calibration in place of its fsdp2 host_floor row.

Why: from 2026-11-27 (stop 42) a calibration prices FSDP2's host from the floor measure_layers.py
--host-floor measures on one GPU (measure_host_floor.py: FSDP2's hooks, casts and copies at 32
tokens, no collective crossing GPUs) on machines of several GPUs too, not from the 2-GPU 32-token
runs of world_host_floor.py. Over the seven 2-GPU leases with both floors and FSDP2 + AdamW steps
(harness/tools/host_floor_statistics.py, reports/sim-validation.md section 0, stop 42) the one-rank
floor put 10 of 16 unseen FSDP2 rows within 10% against 8; mean |error| 8.9% against 11.6% and the
calibration model's own row 5.8% against 10.0%, leaving out the 2 x H200 01:40 lease whose host was
disturbed mid-run (with it 11.3 and 10.0% against 12.7 and 13.4%). A host-bound FSDP2 step is paced by each rank's own
host (NCCL calls return at once, the hosts do not meet), while at 32 tokens on two GPUs every
layer's collectives meet on idle GPUs and add both ranks' jitter, which a full-size step hides
behind GPU work. Calibrations made before took the 2-GPU row (device_calibrate.sh merged it into
layers.json, which lost the one-rank row); their run.log keeps it.

    /usr/bin/python3 harness/tools/one_rank_floor.py RUN.LOG CALIBRATION.yaml

RUN.LOG is device_calibrate.sh's log. With several processes, their entries (the "host floor
process i of N: [...]" lines) go through host_floor_fit.median_over_processes: exactly what
measure_layers.py wrote. With one, the main process's per-depth lines ("host floor fsdp2 D layers:
fwd+bwd X ms at 32 tokens", both passes) are fitted as measure_host_floor.measure fits them (to the
log's 0.01 ms). The row keeps the calibration row's model and shape (both are the calibration model
at micro-batch 1, 32 tokens) and drops `world`; the rest of the file stays byte for byte. Prints
the new row. Exit 1 with one line naming the file when the log has no one-rank FSDP2 floor, or the
calibration no fsdp2 row or one at another shape.
"""

import argparse
import json
import re
import sys

from host_floor_fit import fit_runs, median_over_processes  # harness/tools/, beside this script

PROCESS_LINE = re.compile(r"host floor process \d+ of \d+: (\[.*\])\s*$")
DEPTH_LINE = re.compile(r"\] host floor fsdp2 (\d+) layers: fwd\+bwd (\S+) ms at (\d+) tokens")
# One host_floor row of a calibration file, as dmuon-bench calibrate writes it (yaml-cpp, flow style).
FSDP2_ROW = re.compile(r'^(?P<indent>[ \t]*- )\{model: "(?P<model>[^"]+)", mode: fsdp2, micro_batch: (?P<mb>\d+), '
                       r'seq_len: (?P<seq>\d+),[^}\n]*\}$', re.MULTILINE)


class FloorError(Exception):
    pass


def from_log(text, path):
    """(layers, fwd_bwd_s, per_layer_s, per_step_s, tokens) of the log's one-rank FSDP2 floor."""
    processes = [json.loads(m.group(1)) for line in text.splitlines() if (m := PROCESS_LINE.search(line))]
    if processes:
        entries = [e for e in median_over_processes(processes) if e["mode"] == "fsdp2"]
        if not entries:
            raise FloorError(f"{path}: no process measured an FSDP2 floor with a positive slope")
        e = entries[0]
        return e["layers"], e["fwd_bwd_s"], e["per_layer_s"], e["per_step_s"], e["seq_len"]
    # One process: its lines, not a child's ("[process i]" lines are children of a multi-process run).
    runs, tokens = [], set()
    for line in text.splitlines():
        m = DEPTH_LINE.search(line)
        if m and "[process" not in line:
            runs.append((int(m.group(1)), float(m.group(2)) * 1e-3))
            tokens.add(int(m.group(3)))
    if len({n for n, _ in runs}) < 2:
        raise FloorError(f"{path}: no one-rank FSDP2 floor (\"host floor fsdp2 D layers\" lines at two depths)")
    if len(tokens) != 1:
        raise FloorError(f"{path}: one-rank FSDP2 floor lines at {sorted(tokens)} tokens; expected one length")
    depths, means, per_layer, per_step = fit_runs(runs)
    if not per_layer > 0:
        raise FloorError(f"{path}: one-rank FSDP2 floor runs {runs} have no positive slope")
    return depths, [round(t, 9) for t in means], per_layer, per_step, tokens.pop()  # the log's 10 ns


def row_text(indent, model, micro_batch, seq_len, layers, fwd_bwd_s, per_layer_s, per_step_s, world=1):
    """One fsdp2 host_floor row in the calibration file's flow style (world only where not 1)."""
    floats = ", ".join(repr(float(t)) for t in fwd_bwd_s)
    where = f"world: {world}, " if world != 1 else ""
    return (f'{indent}{{model: "{model}", mode: fsdp2, micro_batch: {micro_batch}, seq_len: {seq_len}, {where}'
            f'layers: [{", ".join(str(n) for n in layers)}], fwd_bwd_s: [{floats}], '
            f'per_layer_s: {float(per_layer_s)!r}, per_step_s: {float(per_step_s)!r}}}')


def replace_fsdp2_row(text, path, layers, fwd_bwd_s, per_layer_s, per_step_s, seq_len=None, world=1):
    """The calibration text with its one fsdp2 host_floor row replaced; seq_len, where given, must
    be the row's."""
    rows = list(FSDP2_ROW.finditer(text))
    if len(rows) != 1:
        raise FloorError(f"{path}: forward_backward.host_floor: expected one fsdp2 row, found {len(rows)}")
    m = rows[0]
    if seq_len is not None and int(m.group("seq")) != seq_len:
        raise FloorError(f"{path}: host_floor fsdp2 seq_len: {m.group('seq')}, but the floor was timed at {seq_len} tokens")
    new = row_text(m.group("indent"), m.group("model"), m.group("mb"), m.group("seq"), layers, fwd_bwd_s,
                   per_layer_s, per_step_s, world)
    return text[:m.start()] + new + text[m.end():], new


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("log", metavar="RUN.LOG", help="device_calibrate.sh's run.log of the calibration call")
    p.add_argument("calibration", metavar="CALIBRATION.yaml", help="the calibration it made (rewritten in place)")
    a = p.parse_args(argv)
    try:
        try:
            with open(a.log) as f:
                log = f.read()
            with open(a.calibration) as f:
                text = f.read()
        except OSError as e:
            raise FloorError(f"{e.filename}: cannot read ({e.strerror})")
        layers, times, per_layer, per_step, tokens = from_log(log, a.log)
        text, row = replace_fsdp2_row(text, a.calibration, layers, times, per_layer, per_step, seq_len=tokens)
        try:
            with open(a.calibration, "w") as f:
                f.write(text)
        except OSError as e:
            raise FloorError(f"{a.calibration}: cannot write ({e.strerror})")
    except FloorError as e:
        print(f"one_rank_floor.py: {e}", file=sys.stderr)
        return 1
    print(row.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
