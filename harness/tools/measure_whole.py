"""The whole model end to end, for measure_layers.py's `whole` row: the reference the simulator
scales the calibration model's parts to (core/cost/layer_timing.hpp: on an H200 the parts, timed
alone behind a spin, summed 5.5% under the whole run, on an H100 2.8%; reports/sim-validation.md).
"""
import statistics
import time

# A decoder layer's GPU time (forward + backward) must be at least this many times the eager host
# floor per layer for the plain timing to be GPU time.
GPU_BOUND_MARGIN = 1.25


def measure_if_gpu_bound(torch, device, spec, family, result, reps, log):
    """The whole row when the run is GPU-bound by the host floor in `result` (measure_layers.py's
    host_floor entries, so only with --host-floor), else None with the reason logged. A failure is
    logged and leaves the row out: the parts measured before it stand."""
    eager = [f for f in result.get("host_floor", []) if f["mode"] == "eager"]
    block = next(r for r in result["layers"] if r["part"] == "block")
    if not eager:
        log("whole: no eager host floor to tell a GPU-bound run (--host-floor): left out")
        return None
    if block["forward_s"] + block["backward_s"] < GPU_BOUND_MARGIN * eager[0]["per_layer_s"]:
        log(f"whole: a layer's GPU time is under {GPU_BOUND_MARGIN} x the host's floor of "
            f"{eager[0]['per_layer_s'] * 1e3:.2f} ms a layer, so a plain run may hold host time: left out")
        return None
    try:
        return measure(torch, device, spec, family, reps, log)
    except Exception as e:  # e.g. out of memory for a large calibration model
        log(f"whole FAILED ({type(e).__name__}: {e}): written without it")
        torch.cuda.empty_cache()
        return None


def measure(torch, device, spec, family, reps, log):
    """The whole model end to end (transformers' causal LM at the scenario's shape, forward with its
    loss and backward), timed plainly with CUDA events: its eager forward synchronizes with the GPU
    once, so it cannot be issued behind a spin (host_floor_study.py), and its host times hold such
    waits (qwen2.5-3b on an H200: forward 41 ms of host for 64 ms of GPU, backward 119 for 126), so
    they cannot tell whether the GPU ever waited for the host. The caller decides with the host floor
    (measure_if_gpu_bound). Returns the row."""
    import dmuon_model  # harness/tools/; needs PyYAML, which the decision above does not
    kwargs = dmuon_model.map_model(spec["model"], spec["model_file"], spec["moe_top_k"])[1]
    model, vocab = dmuon_model.build_causal_lm(torch, family, kwargs, spec["seq_len"], device)
    b, s = spec["micro_batch"], spec["seq_len"]
    runs = time_iterations(torch, model, vocab, b, s, device, warmup=2, iterations=reps)
    fwd, bwd, host_fwd, host_bwd = zip(*runs)
    f, g = statistics.median(fwd), statistics.median(bwd)
    hf, hb = statistics.median(host_fwd), statistics.median(host_bwd)
    layers = model.config.num_hidden_layers
    del model
    torch.cuda.empty_cache()
    log(f"{spec['name']} whole ({layers} layers): forward {f * 1e3:.2f} ms backward {g * 1e3:.2f} ms; "
        f"host forward {hf * 1e3:.2f} ms (with its one wait for the GPU), backward {hb * 1e3:.2f} ms")
    return {"model": spec["name"], "part": "whole", "layers": layers, "micro_batch": b, "seq_len": s,
            "forward_s": f, "backward_s": g}


def time_iterations(torch, model, vocab, batch, seq, device, warmup, iterations):
    """Forward with its loss and backward of `model`, timed plainly: per timed iteration (after
    `warmup` untimed ones), (forward GPU s, backward GPU s, forward host s, backward host s) from
    CUDA events and the host clock, each iteration started on an idle GPU. Also
    host_floor_study.py's whole-model timing."""
    ids = [torch.randint(0, vocab, (batch, seq), device=device) for _ in range(3)]
    out = []
    for it in range(warmup + iterations):
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        t0 = time.perf_counter()
        ev[0].record()
        loss = model(input_ids=ids[it % 3], labels=ids[it % 3], use_cache=False).loss
        ev[1].record()
        t1 = time.perf_counter()
        loss.backward()
        ev[2].record()
        t2 = time.perf_counter()
        torch.cuda.synchronize()
        model.zero_grad(set_to_none=True)
        if it >= warmup:
            out.append((ev[0].elapsed_time(ev[1]) / 1e3, ev[1].elapsed_time(ev[2]) / 1e3, t1 - t0, t2 - t1))
    return out
