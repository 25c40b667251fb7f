#!/usr/bin/env python3
"""Where a whole model's forward + backward time goes on one GPU, against what the calibration's
probes measure in isolation (issue 12's 1 x H100 compute misses, reports/sim-validation.md).

    python3 harness/tools/host_floor_study.py --scenario S.yaml [--scenario S2.yaml ...] --out study.json

For each scenario's model (the model's own transformers code, bf16, eager, as fsdp2_step.py
--mode compute-only runs it), in one process:
- depth: the whole model at 32 tokens (micro-batch 1) with 2, 6, 12 and the full number of
  decoder layers, then the same depths again in reverse order (drift across the run shows as a
  difference between the two passes). Per depth: the GPU time (CUDA events, median) and the
  host's issue time (perf_counter from the first call to backward's return, median). The slope of
  either against depth is the per-layer host cost the simulator's eager floor stands for
  (measure_host_floor.py fits it over 2, 6, 12 and the full depth; 2 and 6 when this study began).
- whole: the model at its scenario shape, GPU time and host issue time, as fsdp2_step.py
  compute-only measures it (the figure the validation compares with).
- parts: one decoder layer, the embedding and the head + loss at the scenario shape, timed as
  measure_layers.py does (events around forward and around backward), and again with the GPU held
  behind a spin kernel while the host issues the whole forward + backward, so that the timed
  interval holds GPU work only (no host lead time).
- `--layer-intervals` instead: the model at its own depth, hooks at each decoder layer's start
  (forward and backward), at 1 x 32 tokens, at the scenario's shape, and at 1 x 32 again: the
  host's time per layer at each shape, and the GPU's lag behind the host at each hook. Whether the
  floor probe's 32 tokens price a host-bound model's layers at its real shape
  (reports/sim-validation.md, stop 41).
- host speed: the mean host cost of one tiny eager op (x.add_(1) on a one-element CUDA tensor,
  10,000 calls), a yardstick for the CPU this lease got.
Progress on stderr; the JSON is written at the end.
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dmuon_model  # noqa: E402
import host_floor_fit  # noqa: E402
import measure_whole  # noqa: E402
import provenance  # noqa: E402

TOKENS = 32
ITERS, WARMUP = 10, 3
SPIN_CYCLES = 200_000_000  # ~100 ms at H100 clocks: longer than the host needs to issue a layer


def log(msg):
    print(f"[host_floor_study {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def time_whole(torch, model, vocab, batch, seq, device):
    """Medians of (GPU seconds, host issue seconds) of forward + backward."""
    runs = measure_whole.time_iterations(torch, model, vocab, batch, seq, device, WARMUP, ITERS)
    return statistics.median(f + b for f, b, _, _ in runs), statistics.median(hf + hb for _, _, hf, hb in runs)


def depth_runs(torch, family, kwargs, full_layers, device, tokens=TOKENS):
    depths = sorted({2, 6, 12, full_layers})
    rows = []
    for pass_no, order in enumerate((depths, list(reversed(depths)))):
        for n in order:
            model, vocab = dmuon_model.build_causal_lm(torch, family, kwargs, tokens, device, layers=n)
            g, h = time_whole(torch, model, vocab, 1, tokens, device)
            del model
            torch.cuda.empty_cache()
            rows.append({"pass": pass_no, "layers": n, "tokens": tokens, "gpu_s": g, "host_issue_s": h})
            log(f"  {tokens} tokens, depth {n} (pass {pass_no}): GPU {g * 1e3:.2f} ms, host issue {h * 1e3:.2f} ms")
    return rows


def token_depth_runs(torch, family, kwargs, device, token_counts):
    """The floor's slope (depths 2, 6, 12, two passes) at each of `token_counts` (micro-batch 1):
    where the layer stays host-bound, a busier GPU under the same host work."""
    out = []
    for tokens in token_counts:
        rows = depth_runs(torch, family, kwargs, 12, device, tokens)
        slope, icpt = fit_slope(rows, "gpu_s")
        out.append({"tokens": tokens, "runs": rows, "per_layer_s": slope, "per_step_s": icpt})
        log(f"  {tokens} tokens: {slope * 1e3:.3f} ms a layer + {icpt * 1e3:.2f} ms")
    return out


def spun_depth_runs(torch, family, kwargs, device):
    """Host issue time of forward and of backward at 32 tokens, once with the GPU idle (each
    kernel runs as soon as it is issued) and once with it busy behind a spin kernel (the launches
    queue up, as they do under a GPU-bound layer). A host issue time as long as the spin means the
    launch queue filled and the host waited: flagged, not a host cost."""
    rows = []
    for n in (2, 6, 12):
        model, vocab = dmuon_model.build_causal_lm(torch, family, kwargs, TOKENS, device, layers=n)
        ids = torch.randint(0, vocab, (1, TOKENS), device=device)
        for spun in (False, True, False, True):
            fwd, bwd, blocked = [], [], False
            for it in range(WARMUP + ITERS):
                torch.cuda.synchronize()
                spin_end = torch.cuda.Event()
                if spun:
                    torch.cuda._sleep(SPIN_CYCLES * 2)
                spin_end.record()
                t0 = time.perf_counter()
                loss = model(input_ids=ids, labels=ids, use_cache=False).loss
                t1 = time.perf_counter()
                loss.backward()
                t2 = time.perf_counter()
                blocked |= spun and spin_end.query()  # the spin was over before the host was done
                model.zero_grad(set_to_none=True)
                torch.cuda.synchronize()
                if it >= WARMUP:
                    fwd.append(t1 - t0)
                    bwd.append(t2 - t1)
            rows.append({"layers": n, "gpu_busy": spun, "host_forward_s": statistics.median(fwd),
                         "host_backward_s": statistics.median(bwd), "queue_drained_before_issue_ended": blocked})
            log(f"  depth {n} GPU {'busy' if spun else 'idle'}: host forward {rows[-1]['host_forward_s'] * 1e3:.2f} ms,"
                f" backward {rows[-1]['host_backward_s'] * 1e3:.2f} ms{' (spin ended early)' if blocked else ''}")
        del model
        torch.cuda.empty_cache()
    return rows


def layer_intervals(torch, model, vocab, batch, seq, device):
    """Per decoder layer, the host's time from one layer's start to the next, forward (pre-hooks in
    layer order) and backward (backward pre-hooks, reverse order), and the GPU's lag behind the host
    at each hook (an event recorded there against the host's clock). Where the GPU does not lag, the
    host paced it and the interval is the host's own cost of that layer at this shape; where it
    lags, the interval is the host's own too unless the launch queue was full (a GPU-bound model's
    backward: Qwen2.5-3B at 2 x 2048 read its GPU's 3.2 ms a layer, 2026-11-27). Medians over the
    iterations, per layer."""
    layers = model.model.layers
    marks = []  # (host seconds since t0, event) in the order the hooks ran

    def mark(*_):
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        marks.append((time.perf_counter(), ev))

    handles = [m.register_forward_pre_hook(mark) for m in layers]
    handles += [m.register_full_backward_pre_hook(mark) for m in layers]
    ids = torch.randint(0, vocab, (batch, seq), device=device)
    n = len(layers)
    fwd, bwd, lag_f, lag_b = ([[] for _ in range(n)] for _ in range(4))
    try:
        for it in range(WARMUP + ITERS):
            torch.cuda.synchronize()
            marks.clear()
            start = torch.cuda.Event(enable_timing=True)
            start.record()
            t0 = time.perf_counter()
            loss = model(input_ids=ids, labels=ids, use_cache=False).loss
            loss.backward()
            torch.cuda.synchronize()
            model.zero_grad(set_to_none=True)
            if it < WARMUP:
                continue
            if len(marks) != 2 * n:
                raise RuntimeError(f"expected {2 * n} layer hooks in an iteration, got {len(marks)}")
            host = [h - t0 for h, _ in marks]
            gpu = [start.elapsed_time(e) / 1e3 for _, e in marks]
            for i in range(n - 1):  # forward: layer i+1 starts after layer i
                fwd[i].append(host[i + 1] - host[i])
                lag_f[i].append(gpu[i] - host[i])
            for j in range(n - 1):  # backward: marks n.. in reverse layer order
                bwd[j].append(host[n + j + 1] - host[n + j])
                lag_b[j].append(gpu[n + j] - host[n + j])
    finally:
        for h in handles:
            h.remove()
    med = lambda xs: [statistics.median(x) for x in xs if x]  # noqa: E731
    f, b, lf, lb = med(fwd), med(bwd), med(lag_f), med(lag_b)
    led_f = [x for x, lag in zip(f, lf) if lag > 0]
    led_b = [x for x, lag in zip(b, lb) if lag > 0]
    out = {"batch": batch, "seq_len": seq, "forward_interval_s": f, "backward_interval_s": b,
           "gpu_lag_forward_s": lf, "gpu_lag_backward_s": lb,
           "forward_s_while_host_led": statistics.median(led_f) if led_f else None,
           "backward_s_while_host_led": statistics.median(led_b) if led_b else None,
           "layers_host_led": [len(led_f), len(led_b)]}
    log(f"  {batch} x {seq} tokens: host a layer forward {statistics.median(f) * 1e3:.3f} ms, backward "
        f"{statistics.median(b) * 1e3:.3f} ms (medians over layers); while the host led the GPU "
        f"({len(led_f)} and {len(led_b)} of {n - 1} intervals): "
        f"{(out['forward_s_while_host_led'] or 0) * 1e3:.3f} and {(out['backward_s_while_host_led'] or 0) * 1e3:.3f} ms")
    return out


def fit_slope(rows, key):
    """Least-squares per-layer slope and intercept of rows[key] against layers (the floor's fit)."""
    return host_floor_fit.least_squares([(r["layers"], r[key]) for r in rows])


def part_times(torch, run, spun):
    """Medians of forward and backward seconds of run() -> (forward thunk, backward thunk)."""
    fwd, bwd = [], []
    for it in range(WARMUP + ITERS):
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        if spun:
            torch.cuda._sleep(SPIN_CYCLES)  # the GPU waits here while the host issues everything below
        forward, backward = run()
        ev[0].record()
        out = forward()
        ev[1].record()
        ev[2].record()
        backward(out)
        ev[3].record()
        torch.cuda.synchronize()
        if it >= WARMUP:
            fwd.append(ev[0].elapsed_time(ev[1]) / 1e3)
            bwd.append(ev[2].elapsed_time(ev[3]) / 1e3)
    return statistics.median(fwd), statistics.median(bwd)


def parts(torch, family, kwargs, batch, seq, device):
    config = dmuon_model.build_config(family, kwargs, seq)
    _, Layer, Rotary, RMSNorm = dmuon_model.family_classes(family)
    h, vocab, bf16 = config.hidden_size, config.vocab_size, torch.bfloat16
    x = torch.randn(batch, seq, h, device=device, dtype=bf16, requires_grad=True)
    dy = torch.randn(batch, seq, h, device=device, dtype=bf16)
    ids = torch.randint(0, vocab, (batch, seq), device=device)
    layer = Layer(config, layer_idx=0).to(device=device, dtype=bf16)
    rotary = Rotary(config=config).to(device)
    pos = torch.arange(seq, device=device).unsqueeze(0).expand(batch, seq)
    with torch.no_grad():
        cos_sin = rotary(x, pos)
    emb = torch.nn.Embedding(vocab, h).to(device=device, dtype=bf16)
    norm = RMSNorm(h, eps=1e-6).to(device=device, dtype=bf16)
    head = torch.nn.Linear(h, vocab, bias=False).to(device=device, dtype=bf16)
    from transformers.loss.loss_utils import ForCausalLMLoss

    def block():
        layer.zero_grad(set_to_none=True)
        x.grad = None

        def f():
            out = layer(x, attention_mask=None, position_ids=pos, position_embeddings=cos_sin, use_cache=False)
            return out[0] if isinstance(out, tuple) else out
        return f, lambda o: o.backward(dy)

    def embedding():
        emb.zero_grad(set_to_none=True)
        return (lambda: emb(ids)), (lambda o: o.backward(dy))

    def head_loss():
        x.grad = None
        head.zero_grad(set_to_none=True)
        return (lambda: ForCausalLMLoss(head(norm(x)), ids, vocab_size=vocab)), (lambda o: o.backward())

    out = {}
    for name, run in (("block", block), ("embedding", embedding), ("head", head_loss)):
        for spun in (False, True):
            f, b = part_times(torch, run, spun)
            out[f"{name}_{'behind_spin' if spun else 'as_measured'}"] = {"forward_s": f, "backward_s": b}
            log(f"  {name} {'behind spin' if spun else 'as measure_layers'}: fwd {f * 1e3:.3f} bwd {b * 1e3:.3f} ms")
    return out, config.num_hidden_layers


def host_op_us(torch, device):
    t = torch.zeros(1, device=device)
    for _ in range(1000):
        t.add_(1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10000):
        t.add_(1)
    host = (time.perf_counter() - t0) / 10000 * 1e6
    torch.cuda.synchronize()
    return host


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", action="append", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--floor-tokens", help="only the floor's slope at these token counts (e.g. 32,256,1024) and "
                   "the whole model at its scenario shape")
    p.add_argument("--only-spun-depth", action="store_true",
                   help="only the 32-token host issue times with the GPU idle and busy")
    p.add_argument("--layer-intervals", action="store_true",
                   help="only the host's time per decoder layer, from layer hooks, at 1 x 32 tokens and at the "
                        "scenario's shape, the model at its own depth")
    a = p.parse_args()
    import torch
    import transformers
    device = torch.device("cuda", torch.cuda.current_device())
    result = {"tool": "harness/tools/host_floor_study.py", "date": provenance.utc_now(),
              "host": provenance.host_description(), "gpu": torch.cuda.get_device_name(device),
              "versions": f"torch {torch.__version__}, transformers {transformers.__version__}",
              "command": "python3 " + " ".join(sys.argv), "models": []}
    result["host_op_us_before"] = host_op_us(torch, device)
    log(f"host: {result['host_op_us_before']:.2f} us an eager op")
    for scenario in a.scenario:
        spec = dmuon_model.resolve(scenario)
        family, kwargs = dmuon_model.map_model(spec["model"], spec["model_file"], spec["moe_top_k"])
        b, s = spec["micro_batch"], spec["seq_len"]
        log(f"{spec['name']} ({scenario}): micro_batch {b} seq_len {s}")
        if a.floor_tokens:
            counts = [int(x) for x in a.floor_tokens.split(",")]
            layers = kwargs["num_hidden_layers"]
            model, vocab = dmuon_model.build_causal_lm(torch, family, kwargs, s, device, layers=layers)
            gw, hw = time_whole(torch, model, vocab, b, s, device)
            del model
            torch.cuda.empty_cache()
            log(f"  whole: GPU {gw * 1e3:.2f} ms, host issue {hw * 1e3:.2f} ms")
            result["models"].append({"model": spec["name"], "micro_batch": b, "seq_len": s, "layers": layers,
                                     "whole": {"gpu_s": gw, "host_issue_s": hw},
                                     "floor_by_tokens": token_depth_runs(torch, family, kwargs, device, counts)})
            continue
        if a.layer_intervals:
            layers = kwargs["num_hidden_layers"]
            model, vocab = dmuon_model.build_causal_lm(torch, family, kwargs, s, device, layers=layers)
            shapes = [layer_intervals(torch, model, vocab, bb, ss, device) for bb, ss in ((1, TOKENS), (b, s), (1, TOKENS))]
            gw, hw = time_whole(torch, model, vocab, b, s, device)
            del model
            torch.cuda.empty_cache()
            log(f"  whole: GPU {gw * 1e3:.2f} ms, host issue {hw * 1e3:.2f} ms")
            result["models"].append({"model": spec["name"], "layers": layers, "layer_intervals": shapes,
                                     "whole": {"gpu_s": gw, "host_issue_s": hw}})
            continue
        if a.only_spun_depth:
            result["models"].append({"model": spec["name"], "spun_depth_32_tokens":
                                     spun_depth_runs(torch, family, kwargs, device)})
            continue
        part, layers = parts(torch, family, kwargs, b, s, device)
        model, vocab = dmuon_model.build_causal_lm(torch, family, kwargs, s, device, layers=layers)
        gw, hw = time_whole(torch, model, vocab, b, s, device)
        del model
        torch.cuda.empty_cache()
        log(f"  whole: GPU {gw * 1e3:.2f} ms, host issue {hw * 1e3:.2f} ms")
        rows = depth_runs(torch, family, kwargs, layers, device)
        entry = {"model": spec["name"], "scenario": scenario, "micro_batch": b, "seq_len": s, "layers": layers,
                 "whole": {"gpu_s": gw, "host_issue_s": hw}, "parts": part, "depth_32_tokens": rows}
        for key in ("gpu_s", "host_issue_s"):
            slope, icpt = fit_slope(rows, key)
            entry[f"fit_{key}"] = {"per_layer_s": slope, "per_step_s": icpt}
            two_six = [statistics.fmean(r[key] for r in rows if r["layers"] == n) for n in (2, 6)]
            entry[f"slope_2_6_{key}"] = (two_six[1] - two_six[0]) / 4
            log(f"  {key}: least-squares {slope * 1e3:.3f} ms a layer + {icpt * 1e3:.2f} ms; "
                f"2-6 slope {entry[f'slope_2_6_{key}'] * 1e3:.3f} ms")
        result["models"].append(entry)
    result["host_op_us_after"] = host_op_us(torch, device)
    log(f"host: {result['host_op_us_after']:.2f} us an eager op")
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
