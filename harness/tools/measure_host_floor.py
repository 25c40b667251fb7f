"""The host's floor under a decoder layer: what one layer's forward + backward costs when the GPU
has almost nothing to do (micro-batch 1, 32 tokens), eager PyTorch and FSDP2.

A small model's layers are host-bound: eager PyTorch dispatches each layer's ~100 kernels from
Python and the autograd engine, FSDP2 adds its per-layer hooks, casts and collectives, and the GPU
waits on the host (reports/sim-validation.md, the qwen2-0.5b and FSDP2 misses). The simulator
prices a layer as max(its GPU time, this floor) (core/cost/forward_backward_cost.hpp).

How: the model's own transformers code (fsdp2_step.py's build_model, run_iterations), built with
2 and then 6 decoder layers; forward + backward of the whole model timed at 32 tokens, median of
the iterations; the floor per layer is the slope (t6 - t2) / 4, so the once-per-step costs
(embedding, head and loss, FSDP2's root) fall into the intercept, reported beside it. FSDP2 runs on
one rank (world 1: no collective crosses a GPU, the hooks, casts and copies all run), fp32 master
parameters, bf16 compute, fp32 reduce, as fsdp2_step.py --mode fsdp2. Used by measure_layers.py
--host-floor; each entry is
  {"model", "mode": "eager" | "fsdp2", "micro_batch", "seq_len", "layers": [2, 6],
   "fwd_bwd_s": [t2, t6], "per_layer_s", "per_step_s"}
"""

import argparse
import statistics

import fsdp2_step  # harness/tools/, beside this module
import dmuon_model

TOKENS = 32
LAYER_COUNTS = (2, 6)
ITERS, WARMUP = 10, 3


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
    for mode in modes:
        tool_mode = "compute-only" if mode == "eager" else "fsdp2"
        t = [_median_fwd_bwd(torch, spec, family, kwargs, n, tool_mode, device, log) for n in LAYER_COUNTS]
        per_layer = (t[1] - t[0]) / (LAYER_COUNTS[1] - LAYER_COUNTS[0])
        if per_layer <= 0:  # noise larger than four layers' cost: no floor to report
            log(f"host floor {mode}: not reported ({LAYER_COUNTS} layers took {t} s: no positive slope)")
            continue
        entries.append({"model": spec["name"], "mode": mode, "micro_batch": 1, "seq_len": TOKENS,
                        "layers": list(LAYER_COUNTS), "fwd_bwd_s": t, "per_layer_s": per_layer,
                        "per_step_s": t[0] - LAYER_COUNTS[0] * per_layer})
        log(f"host floor {mode}: {per_layer * 1e3:.3f} ms a layer, {entries[-1]['per_step_s'] * 1e3:.2f} ms a step")
    return entries
