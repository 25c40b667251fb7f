#!/usr/bin/env python3
"""The baseline of `dmuon-bench kernels`: torch.optim.Muon's own Newton-Schulz, timed on the GPU.

    python3 harness/tools/torch_ns_baseline.py --shapes 2048x11008,256x2048 --out torch.json
        [--repeats 10] [--warmup 3] [--golden-dir DIR --golden-shapes 768x2048,2048x768]

For each shape: median seconds of torch.optim._muon._zeropower_via_newtonschulz (exactly the call
torch.optim.Muon makes: Keller's coefficients, 5 steps, eps 1e-7, fp32 input cast to bf16 inside),
timed with CUDA events after warm-up, rotating among several fp32 input sets so the L2 cache does
not hold the input between calls. Also torch's relative error against the same iteration in
float64 on one input, and the GEMM precision flags in force.

--golden-dir writes a dmuon-golden-1 directory (manifest.json + .npy) of ns cases at larger
shapes, for `dmuon-verify --backend cuda --golden DIR` (our error vs torch's on the same input).
"""

import argparse
import json
import os
import sys

import numpy as np
import torch

import provenance  # harness/tools/provenance.py, beside this script

KELLER = (3.4445, -4.7750, 2.0315)
STEPS = 5
EPS = 1e-7
L2_BYTES = 50 * 2**20  # H100: 50 MiB


def zeropower():
    from torch.optim import _muon  # noqa: the function torch.optim.Muon calls
    fn = _muon._zeropower_via_newtonschulz
    return lambda g: fn(g, KELLER, STEPS, EPS)


def ns_float64(g):
    """torch's iteration in float64: the exact reference for torch's bf16 error."""
    x = g.double()
    transposed = x.size(0) > x.size(1)
    if transposed:
        x = x.T
    x = x / x.norm().clamp(min=EPS)
    a, b, c = KELLER
    for _ in range(STEPS):
        A = x @ x.T
        B = b * A + c * (A @ A)
        x = a * x + B @ x
    return x.T if transposed else x


def parse_shapes(text):
    shapes = []
    for item in filter(None, text.split(",")):
        r, c = item.lower().split("x")
        shapes.append((int(r), int(c)))
    return shapes


def time_shape(fn, rows, cols, warmup, repeats):
    bytes_per = rows * cols * 4
    sets = max(2, min(8, -(-3 * L2_BYTES // bytes_per)))
    gen = torch.Generator(device="cuda").manual_seed(rows * 7919 + cols)
    inputs = [torch.randn(rows, cols, device="cuda", generator=gen) for _ in range(sets)]
    for i in range(max(warmup, sets)):
        fn(inputs[i % sets])
    torch.cuda.synchronize()
    times = []
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for i in range(repeats):
        start.record()
        fn(inputs[i % sets])
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3)
    times.sort()
    y = fn(inputs[0]).double()
    ref = ns_float64(inputs[0])
    err = ((y - ref).norm() / ref.norm()).item()
    return {"rows": rows, "cols": cols, "median_seconds": times[len(times) // 2], "min_seconds": times[0],
            "repeats": repeats, "input_sets": sets, "rel_error_vs_float64": err}


def write_golden(directory, shapes, fn):
    os.makedirs(directory, exist_ok=True)
    cases = []
    gen = torch.Generator().manual_seed(20261122)
    for rows, cols in shapes:
        x = torch.randn(rows, cols, generator=gen)
        y = fn(x.cuda()).float().cpu()
        stem = f"ns_{rows}x{cols}"
        # torch hands tall results back transposed (a view); the reader takes either order,
        # C order keeps the files' bytes independent of strides.
        np.save(os.path.join(directory, stem + "_X.npy"), np.ascontiguousarray(x.numpy(), dtype=np.float32))
        np.save(os.path.join(directory, stem + "_Y.npy"), np.ascontiguousarray(y.numpy(), dtype=np.float32))
        cases.append({"name": stem, "kind": "ns",
                      "ns": {"coefficients": "keller", "steps": STEPS, "eps": EPS, "norm": "clamp",
                             "dtype": "bf16", "normalize_dtype": "bf16"},
                      "inputs": {"X": stem + "_X.npy"}, "expected": {"Y": stem + "_Y.npy"},
                      # Same tolerance as dump_torch_cases.py's ns cases (a faithful bf16 emulation
                      # lands within ~4e-3 of torch's GPU result).
                      "tolerance": {"rel": 2e-2},
                      "notes": "torch.optim._muon._zeropower_via_newtonschulz on the GPU"})
    manifest = {"format": "dmuon-golden-1", "generator": "harness/tools/torch_ns_baseline.py",
                "torch_version": torch.__version__, "device": torch.cuda.get_device_name(),
                **provenance.stamp(), "seed": 20261122,
                "cases": cases}
    with open(os.path.join(directory, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shapes", required=True, help="comma-separated RxC list")
    p.add_argument("--out", required=True)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--golden-dir")
    p.add_argument("--golden-shapes", default="768x2048,2048x768")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_ns_baseline: no CUDA device")
    fn = zeropower()
    rows = []
    for rows_, cols in parse_shapes(a.shapes):
        r = time_shape(fn, rows_, cols, a.warmup, a.repeats)
        print(f"torch NS {rows_}x{cols}: {r['median_seconds']*1e3:.3f} ms, err {r['rel_error_vs_float64']:.3e}",
              file=sys.stderr, flush=True)
        rows.append(r)
    m = torch.backends.cuda.matmul
    out = {"format": "dmuon-torch-ns-baseline-1", "torch_version": torch.__version__,
           "device": torch.cuda.get_device_name(), "call": "torch.optim._muon._zeropower_via_newtonschulz",
           "coefficients": list(KELLER), "steps": STEPS, "eps": EPS, "input_dtype": "fp32",
           "flags": {"allow_bf16_reduced_precision_reduction": m.allow_bf16_reduced_precision_reduction,
                     "allow_tf32": m.allow_tf32},
           **provenance.stamp(), "rows": rows}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    if a.golden_dir:
        write_golden(a.golden_dir, parse_shapes(a.golden_shapes), fn)


if __name__ == "__main__":
    main()
