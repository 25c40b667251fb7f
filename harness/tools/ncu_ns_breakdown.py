#!/usr/bin/env python3
"""Per-kernel GPU time of each Newton-Schulz call in an `ncu --csv --metrics gpu__time_duration.sum`
capture of `dmuon-bench kernels` (harness/tools/device_ns_breakdown.sh).

A call starts at its sum-of-squares kernel (the normalisation's first launch) and ends before the
next one or before a non-NS launch (input fill, the GEMM/copy ceilings): everything between is one
NS call's program. For each call: its kernels grouped by kind (the sm_90a triangle kernel with and
without C, cuBLAS GEMMs, normalisation, transposes, identity adds), with count, total and share.

usage: ncu_ns_breakdown.py CAPTURE.csv [--label TEXT]
"""
import argparse
import csv
import re
import sys

# Kernel kinds by substring of ncu's (demangled) kernel name, first match wins.
KINDS = [
    ("sum_squares", "normalise: sum of squares"),
    ("norm_scale", "normalise: scale"),
    ("normalize_transposed", "normalise: scale + transpose"),
    ("normalize", "normalise: scale"),
    ("transpose_16", "transpose out"),
    ("add_identity", "Q = Z + a I"),
    ("mirror_lower", "mirror"),
    ("store_fp32", "store fp32"),
    ("nvjet", "cuBLAS GEMM"),
    ("gemm", "cuBLAS GEMM"),
    ("cutlass", "cuBLAS GEMM"),
]
# Launches that are not part of an NS call (inputs, checks, the ceilings' copies): they end one.
NOT_NS = ("fill_normal", "copy", "diff_norms", "empty_kernel")


# The triangle kernel's instances: sym_gemm_kernel<T, ..., kHasC> (older trees had a tile
# argument between); ncu may print the bool as true/false, (bool)1/(bool)0 or 1/0.
TRIANGLE = re.compile(r"sym_gemm_kernel<\s*(__half|__nv_bfloat16)\s*,(?:[^<>,]*,)*\s*(true|false|\(bool\)1|\(bool\)0|1|0)\s*>")


def kind_of(name):
    m = TRIANGLE.search(name)
    if m:
        dtype = "fp16" if m.group(1) == "__half" else "bf16"
        with_c = m.group(2) in ("true", "(bool)1", "1")
        return f"triangle, {'with C' if with_c else 'X X^T'} ({dtype})"
    for key, kind in KINDS:
        if key in name:
            return kind
    return "other: " + name[:60]


def read_capture(path):
    """(kernel name, seconds) in launch order."""
    rows = []
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages are not CSV rows
    for rec in csv.DictReader(lines):
        if rec.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = rec.get("Metric Unit", "")
        value = float(rec["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3, "second": 1.0, "s": 1.0}.get(unit)
        if scale is None:
            sys.exit(f"ncu_ns_breakdown.py: {path}: unknown unit {unit!r} for gpu__time_duration.sum")
        rows.append((rec["Kernel Name"], value * scale))
    if not rows:
        sys.exit(f"ncu_ns_breakdown.py: {path}: no gpu__time_duration.sum rows")
    return rows


def calls(rows):
    """Lists of (name, seconds), one per NS call."""
    out, cur = [], None
    for name, sec in rows:
        if "sum_squares" in name:
            cur = [(name, sec)]
            out.append(cur)
        elif cur is not None and not any(m in name for m in NOT_NS):
            cur.append((name, sec))
        else:
            cur = None
    return out


def by_kind(call):
    """{kind: (launches, seconds)} of one call."""
    groups = {}
    for name, sec in call:
        k = kind_of(name)
        n, t = groups.get(k, (0, 0.0))
        groups[k] = (n + 1, t + sec)
    return groups


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    found = calls(read_capture(a.capture))
    if not found:
        sys.exit(f"ncu_ns_breakdown.py: {a.capture}: no NS call (no sum-of-squares launch)")
    for i, call in enumerate(found):
        total = sum(s for _, s in call)
        print(f"{a.label} call {i + 1}: {len(call)} kernels, {total * 1e3:.3f} ms of GPU time")
        for k, (n, t) in sorted(by_kind(call).items(), key=lambda kv: -kv[1][1]):
            print(f"  {k:34s} {n:3d} x {t / n * 1e3:8.3f} ms = {t * 1e3:8.3f} ms ({100 * t / total:5.1f}%)")


if __name__ == "__main__":
    main()
