#!/usr/bin/env python3
"""Where one profiled training iteration's time goes, from a PyTorch profiler Chrome trace.

    python3 harness/tools/torch_trace_summary.py TRACE.json[.gz] [--json OUT]

Reads the GPU kernels (`"cat": "kernel"`) and reports, over the window from the first kernel's
start to the last one's end:
  - busy time per CUDA stream and for all streams together (the union of kernel intervals, so
    overlapping kernels count once) and the idle rest of the window: a GPU that is idle while
    the host is busy is host-bound (launches, Python hooks), not bandwidth- or FLOP-bound;
  - kernel time by kind: NCCL collectives, GEMMs, copies/casts (FSDP2's copy-in/copy-out, dtype
    casts, chunk_cat/split), and the rest (elementwise, norms, attention, optimizer);
  - the number of kernels.
fsdp2_step.py --profile calls summarize() on the trace it writes; this file has no torch import.
"""
import argparse
import gzip
import json
import sys

KINDS = (
    ("nccl", ("nccl",)),
    ("gemm", ("gemm", "nvjet", "cutlass", "xmma", "cublas")),
    ("copy_cast", ("copy", "chunk_cat", "split_with_sizes", "cat_", "catarray", "to_copy", "memcpy", "memset")),
    ("attention", ("flash", "fmha", "attention", "sdpa")),
)


def kind_of(name):
    low = name.lower()
    for kind, keys in KINDS:
        if any(k in low for k in keys):
            return kind
    return "other"


def union_seconds(intervals):
    """Length of the union of [start, end) intervals (microseconds in, seconds out)."""
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total / 1e6


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def summarize(trace):
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X" and "dur" in e]
    if not kernels:
        raise ValueError("no GPU kernels in the trace (was CUDA activity profiled?)")
    start = min(e["ts"] for e in kernels)
    end = max(e["ts"] + e["dur"] for e in kernels)
    by_stream, by_kind = {}, {}
    for e in kernels:
        stream = str(e.get("args", {}).get("stream", "?"))
        by_stream.setdefault(stream, []).append((e["ts"], e["ts"] + e["dur"]))
        k = kind_of(e.get("name", ""))
        by_kind[k] = by_kind.get(k, 0.0) + e["dur"] / 1e6
    window = (end - start) / 1e6
    busy = union_seconds([iv for ivs in by_stream.values() for iv in ivs])
    return {
        "window_seconds": window,
        "gpu_busy_seconds": busy,
        "gpu_idle_seconds": window - busy,
        "busy_seconds_by_stream": {s: union_seconds(ivs) for s, ivs in sorted(by_stream.items())},
        "kernel_seconds_by_kind": dict(sorted(by_kind.items())),
        "kernels": len(kernels),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("trace")
    p.add_argument("--json", help="also write the summary here")
    a = p.parse_args()
    try:
        s = summarize(load(a.trace))
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"torch_trace_summary.py: {a.trace}: {e}")
    print(json.dumps(s, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(s, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
