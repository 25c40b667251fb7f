"""The host's floor under a decoder layer: what one layer's forward + backward costs when the GPU
has almost nothing to do (micro-batch 1, 32 tokens), eager PyTorch and FSDP2.

A small model's layers are host-bound: eager PyTorch dispatches each layer's ~100 kernels from
Python and the autograd engine, FSDP2 adds its per-layer hooks, casts and collectives, and the GPU
waits on the host (reports/sim-validation.md, the qwen2-0.5b and FSDP2 misses). The simulator
prices a layer as max(its GPU time, this floor) (core/cost/forward_backward_cost.hpp).

How: the model's own transformers code (fsdp2_step.py's build_model, run_iterations), built with
2, 6 and 12 decoder layers and its own depth (host_floor_fit.floor_depths), then the same depths
again in reverse order; forward + backward of the whole model timed at 32 tokens, median of the
iterations; the floor per layer is the least-squares slope over the runs, so the once-per-step
costs (embedding, head and loss, FSDP2's root) fall into the intercept, reported beside it. Why
two passes: the device machine's host speed drifts by 20% within a minute
(harness/tools/host_floor_study.py, reports/sim-validation.md section 0), and a slope from two
runs four layers apart read 2.3 to 3.5 ms a layer for one model within a minute (2026-11-25);
`fwd_bwd_s` holds each depth's mean of its two runs. FSDP2 runs on one rank (world 1: no
collective crosses a GPU, the hooks, casts and copies all run), fp32 master parameters, bf16
compute, fp32 reduce, as fsdp2_step.py --mode fsdp2. Used by measure_layers.py
--host-floor (--host-floor-processes N: N processes, the median per depth, median_over_processes);
on its own, one process's floor:
    python3 harness/tools/measure_host_floor.py --scenario FILE --out FLOOR.json   # {"host_floor": [...]}
Each entry is
  {"model", "mode": "eager" | "fsdp2", "micro_batch", "seq_len", "layers": [2, 6, 12, 36],
   "fwd_bwd_s": [t2, t6, t12, t36], "per_layer_s", "per_step_s"}
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import fsdp2_step  # harness/tools/, beside this module
from host_floor_fit import fit_runs, floor_depths, median_over_processes  # harness/tools/, beside this module
import dmuon_model

TOKENS = 32
# 20 timed iterations a visit (10 until 2026-11-27): a visit to the deepest depth then spans
# seconds (Qwen2.5-3B at 36 layers: 112 ms an iteration eager, 237 ms FSDP2, 2026-11-27), so the
# host's drift within seconds averages in rather than deciding the visit.
ITERS, WARMUP = 20, 3


def _median_fwd_bwd(torch, spec, family, kwargs, layers, mode, device, log):
    args = argparse.Namespace(mode=mode, reshard=False, warmup=WARMUP, iters=ITERS)
    config = dmuon_model.build_config(family, dict(kwargs, num_hidden_layers=layers), TOKENS)
    model, _ = fsdp2_step.build_model(torch, config, args, 1, device.index)
    model.train()
    small = dict(spec, micro_batch=1, seq_len=TOKENS)
    times, _ = fsdp2_step.run_iterations(torch, model, None, small, config.vocab_size, args, device)
    del model
    torch.cuda.empty_cache()
    seconds = statistics.median(t[0] for t in times)
    log(f"host floor {mode} {layers} layers: fwd+bwd {seconds * 1e3:.2f} ms at {TOKENS} tokens")
    return seconds


def measure(torch, spec, device, log):
    """Entries for eager and FSDP2 (FSDP2 only where torch.distributed can start on this GPU)."""
    family, kwargs = dmuon_model.map_model(spec["model"], spec["model_file"], spec["moe_top_k"])
    modes = ["eager"]
    try:
        fsdp2_step.init_distributed(torch, argparse.Namespace(mode="fsdp2"))
        modes.append("fsdp2")
    except Exception as e:  # the eager floor still stands
        log(f"host floor: FSDP2 not measured (torch.distributed on one GPU failed: {type(e).__name__}: {e})")
    entries = []
    counts = floor_depths(kwargs["num_hidden_layers"])
    if len(counts) < 2:
        log(f"host floor: not measured ({spec['name']} has {kwargs['num_hidden_layers']} layer: no slope)")
        return entries
    for mode in modes:
        tool_mode = "compute-only" if mode == "eager" else "fsdp2"
        runs = [(n, _median_fwd_bwd(torch, spec, family, kwargs, n, tool_mode, device, log))
                for n in counts + tuple(reversed(counts))]
        depths, means, per_layer, per_step = fit_runs(runs)
        if per_layer <= 0:  # noise larger than ten layers' cost: no floor to report
            log(f"host floor {mode}: not reported (runs {runs}: no positive slope)")
            continue
        entries.append({"model": spec["name"], "mode": mode, "micro_batch": 1, "seq_len": TOKENS,
                        "layers": depths, "fwd_bwd_s": means, "per_layer_s": per_layer,
                        "per_step_s": per_step})
        log(f"host floor {mode}: {per_layer * 1e3:.3f} ms a layer, {per_step * 1e3:.2f} ms a step")
    return entries


def in_processes(count, spec_args, device, log):
    """`count` more floors, each measured by a process of its own (this file's command line) on
    `device`; spec_args: the scenario or model arguments measure_layers.py was given. Each child
    gets its own rendezvous port: the caller's FSDP2 process group may still hold the default. A
    process that fails is logged and left out; the others' floors are returned."""
    floors = []
    for i in range(count):
        fd, out = tempfile.mkstemp(prefix="measure_host_floor-", suffix=".json")
        os.close(fd)
        env = dict(os.environ, MASTER_PORT=str(29611 + i))
        cmd = [sys.executable, os.path.abspath(__file__), *spec_args, "--device", device, "--out", out]
        done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in done.stdout.splitlines():
            log(f"  [process {i + 2}] {line}")
        try:
            if done.returncode != 0:
                raise RuntimeError(f"exit {done.returncode}")
            with open(out) as f:
                floors.append(json.load(f)["host_floor"])
        except (RuntimeError, OSError, ValueError, KeyError) as e:
            log(f"host floor process {i + 2} failed ({type(e).__name__}: {e}): left out of the median")
        finally:
            os.remove(out)
    return floors


def measure_in_processes(torch, spec, device, log, processes, spec_args):
    """measure() here and in processes - 1 more processes: per mode and depth the median over the
    processes that measured it (host_floor_fit.median_over_processes); each process's entries are
    logged."""
    floors = [measure(torch, spec, device, log)]
    if processes > 1:
        floors += in_processes(processes - 1, spec_args, f"cuda:{device.index}", log)
        for i, entries in enumerate(floors):
            log(f"host floor process {i + 1} of {len(floors)}: {json.dumps(entries)}")
        floors = [median_over_processes(floors)]
        for e in floors[0]:
            log(f"host floor {e['mode']}, median over processes: {e['per_layer_s'] * 1e3:.3f} ms a layer, "
                f"{e['per_step_s'] * 1e3:.2f} ms a step")
    return floors[0]


def main():
    p = argparse.ArgumentParser(description="one process's host floor (measure_layers.py --host-floor's part)")
    dmuon_model.add_spec_arguments(p, "dmuon scenario YAML (its model)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", required=True, help='JSON file to write: {"host_floor": [entries]}')
    a = p.parse_args()
    dmuon_model.require_spec_arguments(p, a)
    try:
        spec = dmuon_model.resolve(a.scenario, a.model, a.seq_len, a.micro_batch)
    except dmuon_model.ModelError as e:
        sys.exit(f"measure_host_floor.py: {e}")
    import torch
    if not torch.cuda.is_available():
        sys.exit("measure_host_floor.py: needs a CUDA GPU")
    device = torch.device(a.device)
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    torch.cuda.set_device(device)
    entries = measure(torch, spec, device, lambda m: print(m, flush=True))
    with open(a.out, "w") as f:
        json.dump({"host_floor": entries}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
