#!/usr/bin/env python3
"""A real PyTorch FSDP2 + AdamW training step of a dmuon model, timed: what dmuon-sim's
`adamw` strategy predicts (dmuon-sim --validate reads the JSON this writes).

    torchrun --standalone --nproc-per-node 2 harness/tools/fsdp2_step.py \\
        --scenario scenarios/qwen2.5-3b-2xh200.yaml --out fsdp2.json
    python3 harness/tools/fsdp2_step.py --model scenarios/models/qwen2.5-1.5b.yaml \\
        --seq-len 2048 --micro-batch 2 --mode compute-only --out compute.json

fsdp2 (default; torchrun on N GPUs, or plain python on 1): the whole model from its config
(transformers AutoModelForCausalLM.from_config, dmuon_model.py maps the YAML, SDPA attention),
fp32 master parameters, fully_shard per decoder layer then the root with
MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), torch.optim.AdamW (its default
foreach implementation), random token ids as inputs and labels. Per iteration, CUDA events time
forward + loss + backward (FSDP2's all-gathers and reduce-scatters included, as it overlaps
them; backward returns after the last reduce-scatter), the optimizer step (+ zero_grad) and the
whole step; the medians over --iters iterations after --warmup, of the slowest rank each
iteration, are reported, with torch.cuda.max_memory_allocated / max_memory_reserved (the
largest over ranks, from after set-up through the last iteration).
compute-only: one GPU, no FSDP, no optimizer: bf16 parameters and only forward + backward timed,
to isolate compute (fp32 AdamW state would not fit large models on one GPU).

A model whose fp32 parameters would fill more than half a GPU is built on the meta device,
sharded, then materialised (normal(0, 0.02) matrices, unit norms, zero biases, rotary
frequencies recomputed); smaller ones are built on the GPU directly. Activation checkpointing
is not applied. Progress goes to stderr (rank 0); rank 0 writes the JSON at the end:
  {"tool": "fsdp2_step.py", "command", "date", "gpu", "world", "model", "model_file",
   "micro_batch", "seq_len", "mode", "fwd_bwd_seconds_median", "optimizer_seconds_median",
   "step_seconds_median", "host_fwd_bwd_seconds_median" (the slowest host's wall time issuing forward
   and backward, run_iterations), "peak_allocated_bytes", "peak_reserved_bytes", "iterations", ...;
   "per_iteration_seconds": [fwd+bwd, optimizer, step, host fwd+bwd] of each timed iteration}
"""

import argparse
import gzip
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import provenance  # noqa: E402 (harness/tools/provenance.py, beside this script)
import dmuon_model  # noqa: E402

RANK = int(os.environ.get("RANK", "0"))


def log(msg):
    if RANK == 0:
        print(f"[fsdp2_step {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    dmuon_model.add_spec_arguments(p, "dmuon scenario YAML (its model, training.seq_len, micro_batch, "
                                      "reshard_after_forward)")
    p.add_argument("--mode", choices=["fsdp2", "compute-only"], default="fsdp2")
    p.add_argument("--num-layers", type=int,
                   help="build the model with this many decoder layers instead of its own (the host-floor probe, "
                        "harness/tools/world_host_floor.py)")
    p.add_argument("--out", required=True, help="JSON file to write (rank 0)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--profile", metavar="PREFIX",
                   help="after the timed iterations, profile one more (torch.profiler, CPU + CUDA) and write "
                        "PREFIX-trace.json.gz and PREFIX-summary.json (GPU busy/idle per stream, kernel time by "
                        "kind: harness/tools/torch_trace_summary.py) on rank 0, PREFIX-rankR-trace.json.gz on "
                        "the others; the timed figures are unaffected")
    p.add_argument("--reshard-after-forward", choices=["true", "false"],
                   help="FSDP2 ZeRO-3 re-gather in backward; default: the scenario's "
                        "training.reshard_after_forward (false when absent, as dmuon's default)")
    a = p.parse_args()
    dmuon_model.require_spec_arguments(p, a)
    if a.iters < 1 or a.warmup < 0:
        p.error("--iters: must be >= 1 and --warmup >= 0")
    if a.num_layers is not None and a.num_layers < 1:
        p.error("--num-layers: must be >= 1")
    return a


def reshard_default(args):
    if args.reshard_after_forward:
        return args.reshard_after_forward == "true"
    if args.scenario:
        training = dmuon_model.load_yaml(args.scenario).get("training") or {}
        return bool(training.get("reshard_after_forward", False))
    return False


def init_distributed(torch, args):
    import torch.distributed as dist
    if args.mode == "compute-only":
        if int(os.environ.get("WORLD_SIZE", "1")) != 1:
            sys.exit("fsdp2_step.py: --mode compute-only runs on one GPU: start it without torchrun")
        return None, 1, 0
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")  # plain python on one GPU
    os.environ.setdefault("MASTER_PORT", "29511")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    return dist, dist.get_world_size(), local


def reset_rotary(torch, model, device):
    """Rotary frequencies are non-persistent buffers computed in __init__: on the meta device
    they were never computed. Default RoPE: 1 / base^(2i/dim)."""
    for m in model.modules():
        inv = getattr(m, "inv_freq", None)
        if inv is None or not hasattr(m, "config"):
            continue
        c = m.config
        base = getattr(c, "rope_theta", None) or (getattr(c, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
        dim = inv.numel() * 2
        fresh = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32, device=device) / dim))
        m.inv_freq = fresh
        if hasattr(m, "original_inv_freq"):
            m.original_inv_freq = fresh


def build_model(torch, config, args, world, local):
    from transformers import AutoModelForCausalLM
    device = torch.device("cuda", local)
    with torch.device("meta"):
        meta = AutoModelForCausalLM.from_config(config)
    params = sum(p.numel() for p in meta.parameters())
    gpu_bytes = torch.cuda.get_device_properties(device).total_memory
    log(f"{params / 1e9:.3f}B parameters; GPU {gpu_bytes / 2**30:.0f} GiB")
    if args.mode == "compute-only":
        if 6 * params > 0.8 * gpu_bytes:  # bf16 params + grads + room for activations
            sys.exit(f"fsdp2_step.py: --mode compute-only: {params / 1e9:.2f}B bf16 parameters and gradients "
                     f"do not fit one {gpu_bytes / 2**30:.0f} GiB GPU")
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config)
        return model.to(torch.bfloat16), params
    from_meta = 4 * params > 0.5 * gpu_bytes
    if from_meta:
        model = meta
    else:
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config)
        model = model.float()
    shard(torch, model, args, world)
    if from_meta:
        model.to_empty(device=device)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.ndim >= 2:
                    p.normal_(0.0, 0.02)
                elif name.endswith("bias"):
                    p.zero_()
                else:
                    p.fill_(1.0)
        reset_rotary(torch, model, device)
    return model, params


def shard(torch, model, args, world):
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    except ImportError:  # torch < 2.6
        from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cuda", (world,))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    layers = getattr(getattr(model, "model", model), "layers", None)
    if layers is None:
        sys.exit("fsdp2_step.py: the model has no .model.layers to shard per decoder layer")
    for layer in layers:
        fully_shard(layer, mesh=mesh, mp_policy=mp, reshard_after_forward=args.reshard)
    fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=args.reshard)


def run_iterations(torch, model, optimizer, spec, vocab, args, device):
    """Per iteration [fwd+bwd, optimizer, step, host fwd+bwd] seconds on this rank, and the losses.
    host fwd+bwd: the host's wall time from the forward's first call to backward's return, before
    any synchronisation: what issuing the forward and backward costs this rank's host, the GPU's
    waits included only where FSDP2 blocks the host itself."""
    b, s = spec["micro_batch"], spec["seq_len"]
    batches = [torch.randint(0, vocab, (b, s), device=device) for _ in range(3)]
    times, losses = [], []
    for it in range(args.warmup + args.iters):
        ids = batches[it % len(batches)]
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        ev[0].record()
        host_start = time.perf_counter()
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        host_fwd_bwd = time.perf_counter() - host_start
        ev[1].record()
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        ev[2].record()
        if optimizer is None:
            model.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        t = [ev[0].elapsed_time(ev[1]) / 1e3, ev[1].elapsed_time(ev[2]) / 1e3, ev[0].elapsed_time(ev[2]) / 1e3,
             host_fwd_bwd]
        losses.append(float(loss.detach()))
        if it >= args.warmup:
            times.append(t)
        log(f"iteration {it + 1}/{args.warmup + args.iters}{' (warm-up)' if it < args.warmup else ''}: "
            f"fwd+bwd {t[0] * 1e3:.1f} ms (host {t[3] * 1e3:.1f}), optimizer {t[1] * 1e3:.1f} ms, loss {losses[-1]:.3f}")
    return times, losses


def profile_one(torch, model, optimizer, spec, vocab, args, device):
    """One extra iteration under torch.profiler; every rank writes its trace, rank 0 where its time went."""
    import torch_trace_summary  # harness/tools/, beside this script
    from torch.profiler import ProfilerActivity, profile
    b, s = spec["micro_batch"], spec["seq_len"]
    ids = torch.randint(0, vocab, (b, s), device=device)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        else:
            model.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
    # Every rank's trace (one host, one clock): whether a collective waited for a late peer shows
    # only beside the peer's. Rank 0 also writes the summary.
    trace = args.profile + ("-trace.json" if RANK == 0 else f"-rank{RANK}-trace.json")
    prof.export_chrome_trace(trace)
    if RANK == 0:
        with open(trace) as f:
            summary = torch_trace_summary.summarize(json.load(f))
    with open(trace, "rb") as f, gzip.open(trace + ".gz", "wb") as g:
        g.write(f.read())
    os.remove(trace)
    if RANK != 0:
        return
    summary.update({"what": "one fsdp2_step.py iteration (forward, backward, optimizer) under torch.profiler",
                    "model": spec["name"], "mode": args.mode, "trace": os.path.basename(trace) + ".gz"})
    with open(args.profile + "-summary.json", "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    log(f"profiled iteration: window {summary['window_seconds'] * 1e3:.1f} ms, GPU busy "
        f"{summary['gpu_busy_seconds'] * 1e3:.1f} ms, by kind (ms) "
        + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in summary["kernel_seconds_by_kind"].items()))


def main():
    args = parse_args()
    try:
        spec = dmuon_model.resolve(args.scenario, args.model, args.seq_len, args.micro_batch)
        family, kwargs = dmuon_model.map_model(spec["model"], spec["model_file"], spec["moe_top_k"])
        args.reshard = reshard_default(args)
    except dmuon_model.ModelError as e:
        sys.exit(f"fsdp2_step.py: {e}")
    import torch
    import transformers
    if not args.device.startswith("cuda") or not torch.cuda.is_available():
        sys.exit(f"fsdp2_step.py: --device {args.device}: needs a CUDA GPU")
    dist, world, local = init_distributed(torch, args)
    device = torch.device("cuda", local)
    torch.cuda.set_device(device)
    if args.num_layers is not None:
        kwargs = dict(kwargs, num_hidden_layers=args.num_layers)
    config = dmuon_model.build_config(family, kwargs, spec["seq_len"])
    log(f"{spec['name']} ({family}) mode {args.mode}, world {world}, micro_batch {spec['micro_batch']}, "
        f"seq_len {spec['seq_len']}, reshard_after_forward {args.reshard}; torch {torch.__version__}, "
        f"transformers {transformers.__version__}")
    model, params = build_model(torch, config, args, world, local)
    model.train()
    optimizer = None
    if args.mode == "fsdp2":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, betas=(0.9, 0.95), weight_decay=0.01)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    times, losses = run_iterations(torch, model, optimizer, spec, config.vocab_size, args, device)
    stats = torch.tensor(times + [[float(torch.cuda.max_memory_allocated(device)),
                                   float(torch.cuda.max_memory_reserved(device)), 0.0, 0.0]],
                         dtype=torch.float64, device=device)
    if dist is not None:
        dist.all_reduce(stats, op=dist.ReduceOp.MAX)  # slowest rank (and host) per iteration, largest peak
    profile_error = None
    if args.profile:
        try:
            profile_one(torch, model, optimizer, spec, config.vocab_size, args, device)
        except Exception as e:  # the timed figures above stand; the failure is reported, exit 1
            profile_error = f"{type(e).__name__}: {e}"
            log(f"--profile failed: {profile_error}")
    slowest = stats[:-1].tolist()
    median = lambda k: statistics.median(row[k] for row in slowest)
    report = {
        "tool": "fsdp2_step.py",
        **provenance.stamp(launcher="torchrun --nproc-per-node %d" % world if world > 1 else "python3"),
        "gpu": torch.cuda.get_device_name(device), "world": world, "model": spec["name"],
        "model_file": spec["model_file"], "micro_batch": spec["micro_batch"], "seq_len": spec["seq_len"],
        "mode": args.mode, "num_layers": config.num_hidden_layers, "fwd_bwd_seconds_median": median(0),
        "optimizer_seconds_median": median(1) if optimizer is not None else None,
        "step_seconds_median": median(2), "host_fwd_bwd_seconds_median": median(3),
        "peak_allocated_bytes": int(stats[-1][0]), "peak_reserved_bytes": int(stats[-1][1]),
        "iterations": args.iters, "warmup": args.warmup, "parameters": params,
        "reshard_after_forward": args.reshard if args.mode == "fsdp2" else None,
        "optimizer": "torch.optim.AdamW (foreach), fp32 master" if optimizer is not None else None,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "cuda": torch.version.cuda},
        "transformers_family": family, "losses": losses, "per_iteration_seconds": slowest,
    }
    if RANK == 0:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
        log(f"wrote {args.out}: fwd+bwd {report['fwd_bwd_seconds_median'] * 1e3:.1f} ms, step "
            f"{report['step_seconds_median'] * 1e3:.1f} ms, peak allocated {report['peak_allocated_bytes'] / 2**30:.2f} GiB")
    if dist is not None:
        dist.barrier()
        dist.destroy_process_group()
    if profile_error:
        sys.exit(f"fsdp2_step.py: --profile failed (the timing JSON was written): {profile_error}")


if __name__ == "__main__":
    main()
