#!/usr/bin/env python3
"""Time the forward/backward building blocks of a training step on one GPU, on PyTorch.

    python3 harness/tools/measure_layers.py --scenario scenarios/qwen2.5-3b-2xh200.yaml --out fb.json
    python3 harness/tools/measure_layers.py --model scenarios/models/llama3-8b.yaml \\
        --seq-len 4096 --micro-batch 1 --out fb.json [--device cuda] [--skip-grid] [--reps N]

Writes the calibration's forward_backward section as JSON (core/cost/calibration.hpp
ForwardBackwardTable; the simulator prices a layer from it, core/cost/forward_backward_cost.hpp):
  {"source": "...", "elementwise_GBps": float,
   "gemm": [{"tokens", "in", "out", "forward_s", "backward_s"}],
   "attention": [{"samples", "seq_len", "heads", "kv_heads", "head_dim", "forward_s", "backward_s"}],
   "layers": [{"model", "part", "micro_batch", "seq_len", "forward_s", "backward_s"}],
   "host_floor": [...]}   (with --host-floor; harness/tools/measure_host_floor.py)
- gemm: bf16 y = x W^T (x: tokens x in); backward = dgrad (dy W) + wgrad (dy^T x), the two
  matmuls autograd runs for nn.Linear;
- attention: causal SDPA on the flash backend with enable_gqa, q/k/v laid out as HF models
  pass them (B, S, H, D transposed to B, H, S, D);
- elementwise_GBps: HF's RMSNorm (fp32 upcast) and SiLU(gate) * up, forward and backward, in
  "logical" bytes (each op's tensors read and written once: norm 4 + 6 B per element, SiLU*mul
  6 + 10 B per element of its output), the count core/cost/forward_backward_cost.cpp prices with;
- layers: the model's own transformers code (dmuon_model.py maps the YAML): one decoder layer
  ("block", rotary embeddings computed once outside as the model does), the token embedding
  ("embedding") and final RMSNorm + LM head + HF's causal-LM loss ("head"), at micro_batch x
  seq_len; and the whole model end to end ("whole", with its decoder layers; --skip-whole leaves it
  out), the reference its parts are scaled to (core/cost/layer_timing.hpp; timed plainly, see
  measure_whole).
Every time is the median of --reps calls after warm-up, from CUDA events, issued while the GPU
waits behind a spin kernel so that the events time GPU work and no host issue time (the host's side
is the host floor, measure_host_floor.py); inputs are random
(never zeros) and GEMM operands rotate through a 5 GiB pool so that the L2 cache is not timed.
The grid is bounded to about a minute on an H100 (see GEMM_MAX_FLOPS). Progress goes to stderr;
the JSON is written at the end.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import provenance  # noqa: E402 (harness/tools/provenance.py, beside this script)
import dmuon_model  # noqa: E402

GEMM_TOKENS = [1024, 2048, 4096, 8192, 16384]
GEMM_DIMS = [512, 1024, 2048, 4096, 8192, 16384, 32768]
GEMM_VOCAB = [65536, 131072, 152064]  # head-sized outs, measured for in <= 8192 (hidden sizes)
GEMM_MAX_FLOPS = 2.2e13  # forward FLOPs of one call: ~35 ms on an H100; larger ones are skipped
GEMM_MAX_BYTES = 16e9    # x, W, y and their gradients together
POOL_ELEMENTS = 2560 * 2**20  # bf16 random pool (5.4 GB) the GEMM operands are views of
POOL_STRIDE = 64 * 2**20      # offset step between reps: 128 MB, past the 50 MB L2
ATTN_SEQ = [512, 1024, 2048, 4096, 8192]
ATTN_HEAD_DIM = [64, 128]
ATTN_HEADS = [(16, 2), (16, 8), (32, 2), (32, 8)]  # (heads, kv_heads)
ATTN_TOKENS = 8192  # samples = tokens / seq_len (4096..16384 tokens in all)
SPIN_CYCLES = 20_000_000       # GPU clock cycles a timed issue waits behind: ~10 ms on Hopper
SPIN_CYCLES_MAX = 2_560_000_000  # ~1.3 s: a host slower than that is stuck, not slow


def log(msg):
    print(f"[measure_layers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def issue_behind_spin(torch, issue, cycles=SPIN_CYCLES):
    """issue() with the GPU held in a spin kernel until the host has issued all of it, so that the
    CUDA events issue() records time GPU work only: without it, the host's own issue time leaks
    into the timed interval wherever the GPU is faster than the host (one Qwen2-0.5B decoder layer
    read 4.10 ms forward + backward timed plainly, 1.78 ms behind a spin; the whole model at 2 x 2048
    tokens ran its 24 layers at 2.3 ms each: host_floor_study.py, 2026-11-25). The host floor
    (measure_host_floor.py) is the separate measurement of the host's side. Doubles the spin until
    it outlasts the issue. Returns issue()'s result."""
    while True:
        torch.cuda.synchronize()
        torch.cuda._sleep(cycles)
        spin_end = torch.cuda.Event()
        spin_end.record()
        result = issue()
        if not spin_end.query():
            return result
        if cycles >= SPIN_CYCLES_MAX:
            raise RuntimeError(f"the GPU finished a {cycles}-cycle spin before the host had issued one measurement: "
                               "a stuck host, or more launches than the CUDA launch queue holds (lower --reps)")
        cycles *= 2


def median_seconds(torch, fn, reps, warmup=2):
    """Median of `reps` timed calls fn(i) (CUDA events around each), after `warmup` calls; the reps
    run back to back behind one spin (issue_behind_spin)."""
    for i in range(warmup):
        fn(i)

    def issue():
        events = []
        for i in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(warmup + i)
            end.record()
            events.append((start, end))
        return events

    events = issue_behind_spin(torch, issue)
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events) / 1e3


def fwd_bwd_seconds(torch, forward, backward, reps, warmup=2):
    """Medians of forward and backward timed separately: forward(i) returns what backward(out, i)
    differentiates. Each rep is issued behind its own spin (issue_behind_spin)."""
    for i in range(warmup):
        backward(forward(i), i)
    fwd, bwd = [], []
    for i in range(reps):
        def issue():
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
            ev[0].record()
            out = forward(warmup + i)
            ev[1].record()
            ev[2].record()
            backward(out, warmup + i)
            ev[3].record()
            return ev
        ev = issue_behind_spin(torch, issue)
        fwd.append((ev[0], ev[1]))
        bwd.append((ev[2], ev[3]))
    torch.cuda.synchronize()
    med = lambda pairs: statistics.median(s.elapsed_time(e) for s, e in pairs) / 1e3
    return med(fwd), med(bwd)


def gemm_shapes():
    for tokens in GEMM_TOKENS:
        for k in GEMM_DIMS:
            for n in GEMM_DIMS + [v for v in GEMM_VOCAB if k <= 8192]:
                flops = 2.0 * tokens * k * n
                nbytes = 2 * 2 * (tokens * k + k * n + tokens * n)
                fits_pool = max(tokens * k, k * n, tokens * n) <= POOL_ELEMENTS
                if flops <= GEMM_MAX_FLOPS and nbytes <= GEMM_MAX_BYTES and fits_pool:
                    yield tokens, k, n


def measure_gemm(torch, device, reps):
    F = torch.nn.functional
    pool = torch.randn(POOL_ELEMENTS, device=device, dtype=torch.bfloat16)
    shapes = list(gemm_shapes())
    out = []

    def view(rep, slot, rows, cols):  # a different 128 MB-apart window each rep and operand
        need = rows * cols
        span = POOL_ELEMENTS - need
        off = ((rep * 3 + slot) * POOL_STRIDE) % max(span, 1) // 256 * 256
        return pool[off:off + need].view(rows, cols)

    for i, (t, k, n) in enumerate(shapes):
        fwd = median_seconds(torch, lambda r: F.linear(view(r, 0, t, k), view(r, 1, n, k)), reps)
        def backward(r):
            dy, w, x = view(r, 2, t, n), view(r, 1, n, k), view(r, 0, t, k)
            torch.mm(dy, w)      # dgrad: dL/dx
            torch.mm(dy.t(), x)  # wgrad: dL/dW
        bwd = median_seconds(torch, backward, reps)
        out.append({"tokens": t, "in": k, "out": n, "forward_s": fwd, "backward_s": bwd})
        if i % 25 == 0 or i == len(shapes) - 1:
            log(f"gemm {i + 1}/{len(shapes)}: {t}x{k}x{n} fwd {fwd * 1e3:.3f} ms "
                f"({2 * t * k * n / fwd / 1e12:.0f} TFLOP/s) bwd {bwd * 1e3:.3f} ms")
    del pool
    torch.cuda.empty_cache()
    return out


def measure_attention(torch, device, reps):
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out, gqa = [], "enable_gqa"
    for seq in ATTN_SEQ:
        samples = max(1, ATTN_TOKENS // seq)
        for d in ATTN_HEAD_DIM:
            for heads, kv in ATTN_HEADS:
                def make(h):  # HF layout: (B, S, H, D) projections viewed as (B, H, S, D)
                    x = torch.randn(samples, seq, h, d, device=device, dtype=torch.bfloat16)
                    return x.transpose(1, 2).requires_grad_(True)
                q, k, v = make(heads), make(kv), make(kv)
                dout = torch.randn(samples, heads, seq, d, device=device, dtype=torch.bfloat16)

                def forward(_):
                    nonlocal gqa
                    for t in (q, k, v):
                        t.grad = None
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        if gqa == "enable_gqa":
                            try:
                                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                            except RuntimeError as e:
                                log(f"flash SDPA refused enable_gqa ({e}); repeating k/v as HF's repeat_kv")
                                gqa = "repeat_kv"
                        rep = heads // kv
                        return F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1),
                                                              v.repeat_interleave(rep, 1), is_causal=True)

                fwd, bwd = fwd_bwd_seconds(torch, forward, lambda o, _: o.backward(dout), reps)
                out.append({"samples": samples, "seq_len": seq, "heads": heads, "kv_heads": kv, "head_dim": d,
                            "forward_s": fwd, "backward_s": bwd})
                del q, k, v, dout
        log(f"attention seq {seq}: {len(out)} entries, last fwd {fwd * 1e3:.3f} ms bwd {bwd * 1e3:.3f} ms")
    return out, gqa


def hf_rmsnorm(torch, width, device):
    """HF's RMSNorm (the Llama class, shared by Qwen2/3), or the same code when it cannot be imported."""
    try:
        from transformers.models.llama.modeling_llama import LlamaRMSNorm
        return LlamaRMSNorm(width, eps=1e-6).to(device=device, dtype=torch.bfloat16)
    except ImportError:
        class RMSNorm(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.ones(width))

            def forward(self, x):
                h = x.to(torch.float32)
                h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
                return self.weight * h.to(x.dtype)
        return RMSNorm().to(device=device, dtype=torch.bfloat16)


def measure_elementwise(torch, device, reps):
    F = torch.nn.functional
    tokens, hidden, ffn = 16384, 4096, 8192
    norm = hf_rmsnorm(torch, hidden, device)
    x = torch.randn(tokens, hidden, device=device, dtype=torch.bfloat16, requires_grad=True)
    dx = torch.randn_like(x)
    nf, nb = fwd_bwd_seconds(torch, lambda _: norm(x), lambda o, _: o.backward(dx), reps)
    gate = torch.randn(tokens, ffn, device=device, dtype=torch.bfloat16, requires_grad=True)
    up = torch.randn_like(gate, requires_grad=True)
    dh = torch.randn_like(gate)
    gf, gb = fwd_bwd_seconds(torch, lambda _: F.silu(gate) * up, lambda o, _: o.backward(dh), reps)
    n_norm, n_glu = tokens * hidden, tokens * ffn
    nbytes = n_norm * (4 + 6) + n_glu * (6 + 10)  # the logical count (module docstring)
    gbps = nbytes / (nf + nb + gf + gb) / 1e9
    log(f"elementwise: RMSNorm fwd {n_norm * 4 / nf / 1e9:.0f} bwd {n_norm * 6 / nb / 1e9:.0f} GB/s, "
        f"SiLU*mul fwd {n_glu * 6 / gf / 1e9:.0f} bwd {n_glu * 10 / gb / 1e9:.0f} GB/s; combined {gbps:.0f} GB/s")
    return gbps


def measure_model_layers(torch, device, spec, reps):
    family, kwargs = dmuon_model.map_model(spec["model"], spec["model_file"], spec["moe_top_k"])
    config = dmuon_model.build_config(family, kwargs, spec["seq_len"])
    _, Layer, Rotary, RMSNorm = dmuon_model.family_classes(family)
    b, s, h, vocab = spec["micro_batch"], spec["seq_len"], config.hidden_size, config.vocab_size
    bf16 = torch.bfloat16
    rows = []

    def add(part, fwd, bwd):
        rows.append({"model": spec["name"], "part": part, "micro_batch": b, "seq_len": s,
                     "forward_s": fwd, "backward_s": bwd})
        log(f"{spec['name']} {part}: forward {fwd * 1e3:.3f} ms backward {bwd * 1e3:.3f} ms")

    x = torch.randn(b, s, h, device=device, dtype=bf16, requires_grad=True)
    dy = torch.randn(b, s, h, device=device, dtype=bf16)
    layer = Layer(config, layer_idx=0).to(device=device, dtype=bf16)
    rotary = Rotary(config=config).to(device)
    pos = torch.arange(s, device=device).unsqueeze(0).expand(b, s)
    with torch.no_grad():
        cos_sin = rotary(x, pos)  # once per forward in the model, shared by every layer

    def block(_):
        layer.zero_grad(set_to_none=True)
        x.grad = None
        out = layer(x, attention_mask=None, position_ids=pos, position_embeddings=cos_sin, use_cache=False)
        return out[0] if isinstance(out, tuple) else out  # older transformers return a tuple

    add("block", *fwd_bwd_seconds(torch, block, lambda o, _: o.backward(dy), reps))
    del layer
    ids = torch.randint(0, vocab, (b, s), device=device)
    emb = torch.nn.Embedding(vocab, h).to(device=device, dtype=bf16)
    add("embedding", *fwd_bwd_seconds(torch, lambda _: emb(ids), lambda o, _: o.backward(dy), reps))
    del emb
    add("head", *measure_head(torch, device, config, RMSNorm, x, ids, reps))
    return rows, family


def measure_head(torch, device, config, RMSNorm, x, labels, reps):
    """Final norm + LM head + HF's causal-LM loss (fp32 logits, shifted labels), forward and backward."""
    try:
        from transformers.loss.loss_utils import ForCausalLMLoss
        loss_fn = lambda logits: ForCausalLMLoss(logits, labels, vocab_size=config.vocab_size)
    except ImportError:
        def loss_fn(logits):
            shifted = torch.nn.functional.pad(labels, (0, 1), value=-100)[..., 1:]
            return torch.nn.functional.cross_entropy(logits.float().view(-1, config.vocab_size), shifted.reshape(-1))
    norm = RMSNorm(config.hidden_size, eps=1e-6).to(device=device, dtype=torch.bfloat16)
    head = torch.nn.Linear(config.hidden_size, config.vocab_size, bias=False).to(device=device, dtype=torch.bfloat16)

    def forward(_):
        x.grad = None
        head.zero_grad(set_to_none=True)
        return loss_fn(head(norm(x)))

    return fwd_bwd_seconds(torch, forward, lambda loss, _: loss.backward(), reps)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    dmuon_model.add_spec_arguments(p)
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--device", default="cuda")
    p.add_argument("--reps", type=int, default=7, help="timed calls per measurement (median)")
    p.add_argument("--skip-grid", action="store_true", help="only the model's layers and elementwise rate")
    p.add_argument("--skip-whole", action="store_true", help="not the whole model end to end (its part sums' reference)")
    p.add_argument("--host-floor", action="store_true",
                   help="also the host's floor per decoder layer, eager and FSDP2 (measure_host_floor.py)")
    p.add_argument("--host-floor-processes", type=int, default=1,
                   help="the host floor in this many processes, the median per depth (the host's pace "
                        "differs from process to process)")
    a = p.parse_args()
    dmuon_model.require_spec_arguments(p, a)
    if a.reps < 1:
        p.error("--reps: must be >= 1")
    if a.host_floor_processes < 1:
        p.error("--host-floor-processes: must be >= 1")
    return a


def main():
    a = parse_args()
    try:
        spec = dmuon_model.resolve(a.scenario, a.model, a.seq_len, a.micro_batch)
        dmuon_model.map_model(spec["model"], spec["model_file"], spec["moe_top_k"])  # fail before any GPU work
    except dmuon_model.ModelError as e:
        sys.exit(f"measure_layers.py: {e}")
    import torch
    import transformers
    if not a.device.startswith("cuda") or not torch.cuda.is_available():
        sys.exit(f"measure_layers.py: --device {a.device}: needs a CUDA GPU (CUDA events time every call)")
    device = torch.device(a.device)
    if device.index is None:  # set_device needs an index: "cuda" means the current one
        device = torch.device("cuda", torch.cuda.current_device())
    torch.cuda.set_device(device)
    torch.backends.cuda.matmul.allow_tf32 = False  # bf16 GEMMs only; fp32 ones do not occur
    gpu = torch.cuda.get_device_name(device)
    log(f"{gpu}, torch {torch.__version__}, transformers {transformers.__version__}; "
        f"{spec['name']} micro_batch {spec['micro_batch']} seq_len {spec['seq_len']}")
    t0 = time.time()
    result = {"gemm": [], "attention": []}
    gqa = "not measured"
    if not a.skip_grid:
        result["gemm"] = measure_gemm(torch, device, a.reps)
        result["attention"], gqa = measure_attention(torch, device, a.reps)
    result["elementwise_GBps"] = measure_elementwise(torch, device, a.reps)
    result["layers"], family = measure_model_layers(torch, device, spec, a.reps)
    if a.host_floor:
        import measure_host_floor  # harness/tools/, beside this script
        try:
            result["host_floor"] = measure_host_floor.measure_in_processes(torch, spec, device, log,
                                                                           a.host_floor_processes,
                                                                           dmuon_model.spec_argv(a))
        except Exception as e:  # the GPU timings above stand; the calibration says the floor is absent
            log(f"host floor FAILED ({type(e).__name__}: {e}): written without it")
    if not a.skip_whole:
        import measure_whole  # harness/tools/, beside this script
        whole = measure_whole.measure_if_gpu_bound(torch, device, spec, family, result, a.reps, log)
        if whole:
            result["layers"].append(whole)
    date = provenance.utc_now()
    result["source"] = (f"harness/tools/measure_layers.py; torch {torch.__version__}, transformers "
                        f"{transformers.__version__}, CUDA {torch.version.cuda}; {gpu}; {date}; layers: "
                        f"{spec['name']} as transformers {family}, sdpa; attention GQA: {gqa}; "
                        f"host {provenance.host_description()}")
    ordered = {k: result[k] for k in ("source", "elementwise_GBps", "gemm", "attention", "layers", "host_floor")
               if k in result}
    with open(a.out, "w") as f:
        json.dump(ordered, f, indent=1)
        f.write("\n")
    log(f"wrote {a.out} ({len(result['gemm'])} gemm, {len(result['attention'])} attention, "
        f"{len(result['layers'])} layers) in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
