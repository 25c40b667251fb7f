#!/usr/bin/env python3
"""Per-kernel GPU time of each Newton-Schulz call in an `ncu --csv --metrics gpu__time_duration.sum`
capture of `dmuon-bench kernels` (harness/tools/device_ns_breakdown.sh), with each kind's mean SM
clock where the capture also has sm__cycles_elapsed.avg.per_second.

ncu runs the launches one at a time with gaps between them, so these are not a back-to-back call's
times: on an H100 (2026-12-07) the triangle X X^T of 4096 x 14336 read 0.336 ms a matrix alone and
0.40 in a batch of 64 (one launch), yet 64 launches of one entry each ran the batched call 1-2%
slower than the one launch (reports/kernels-sym-gemm.md, stop 49; why is not established: the
clock column is there to test the power cap next time).

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
TRIANGLE = re.compile(r"sym_gemm_kernel<\s*(__half|__nv_bfloat16)\s*,(?:[^<>,]*,)*"
                      r"\s*(true|false|\(bool\)1|\(bool\)0|1|0)\s*>")


def kind_of(name):
    m = TRIANGLE.search(name)
    if m:
        dtype = "fp16" if m.group(1) == "__half" else "bf16"
        with_c = m.group(2) in ("true", "(bool)1", "1")
        return f"triangle, {'with C' if with_c else 'X X^T'} ({dtype})"
    if "sym_gemm_kernel" in name:  # an instance TRIANGLE does not parse: never counted as cuBLAS's "gemm"
        return "triangle, instance not parsed: " + name[:60]
    for key, kind in KINDS:
        if key in name:
            return kind
    return "other: " + name[:60]


UNITS = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3, "second": 1.0,
         "s": 1.0}
DURATION = "gpu__time_duration.sum"
CLOCK = "sm__cycles_elapsed.avg.per_second"  # optional: the SM clock the launch ran at


def read_capture(path):
    """(kernel name, seconds, SM clock in Hz or None) a launch, in launch order."""
    launches = {}  # ncu's launch ID -> [name, seconds, hz]
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages are not CSV rows
    for rec in csv.DictReader(lines):
        metric, unit = rec.get("Metric Name"), rec.get("Metric Unit", "")
        if metric not in (DURATION, CLOCK):
            continue
        value = float(rec["Metric Value"].replace(",", ""))
        launch = launches.setdefault(int(rec["ID"]), [rec["Kernel Name"], None, None])
        if metric == DURATION:
            if unit not in UNITS:
                sys.exit(f"ncu_ns_breakdown.py: {path}: unknown unit {unit!r} for {DURATION}")
            launch[1] = value * UNITS[unit]
        elif unit.lower() != "hz":  # ncu writes "hz"
            sys.exit(f"ncu_ns_breakdown.py: {path}: unknown unit {unit!r} for {CLOCK}")
        else:
            launch[2] = value
    rows = [tuple(launches[i]) for i in sorted(launches) if launches[i][1] is not None]
    if not rows:
        sys.exit(f"ncu_ns_breakdown.py: {path}: no {DURATION} rows")
    return rows


def calls(rows):
    """Lists of launches, one per NS call."""
    out, cur = [], None
    for launch in rows:
        name = launch[0]
        if "sum_squares" in name:
            cur = [launch]
            out.append(cur)
        elif cur is not None and not any(m in name for m in NOT_NS):
            cur.append(launch)
        else:
            cur = None
    return out


def by_kind(call):
    """{kind: (launches, seconds, mean SM clock in Hz weighted by time, or None)} of one call."""
    groups = {}
    for name, sec, hz in call:
        k = kind_of(name)
        n, t, cycles, timed = groups.get(k, (0, 0.0, 0.0, 0.0))
        groups[k] = (n + 1, t + sec, cycles + (sec * hz if hz else 0.0), timed + (sec if hz else 0.0))
    return {k: (n, t, cycles / timed if timed else None) for k, (n, t, cycles, timed) in groups.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    found = calls(read_capture(a.capture))
    if not found:
        sys.exit(f"ncu_ns_breakdown.py: {a.capture}: no NS call (no sum-of-squares launch)")
    for i, call in enumerate(found):
        total = sum(launch[1] for launch in call)
        print(f"{a.label} call {i + 1}: {len(call)} kernels, {total * 1e3:.3f} ms of GPU time")
        for k, (n, t, hz) in sorted(by_kind(call).items(), key=lambda kv: -kv[1][1]):
            clock = f", {hz / 1e6:5.0f} MHz" if hz else ""
            print(f"  {k:34s} {n:3d} x {t / n * 1e3:8.3f} ms = {t * 1e3:8.3f} ms ({100 * t / total:5.1f}%{clock})")


if __name__ == "__main__":
    main()
