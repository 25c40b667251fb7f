#!/usr/bin/env python3
"""Whole-model NS milliseconds per model and preset from `dmuon-bench kernels --report-json`
files run without --torch-json: the rule of harness/bench/whole_model.cpp (each shape at the
largest timed batch not above its count in the model, else batch 1; times its count).
    whole_ms.py FILE.json...
"""
import collections
import json
import sys

for f in sys.argv[1:]:
    rows = json.load(open(f))["rows"]
    per = collections.defaultdict(list)
    for r in rows:
        for m in r["models"]:
            per[(m, r["preset"], r["rows"], r["cols"], r["count_in_model"])].append(r)
    total = collections.defaultdict(float)
    for (model, preset, _, _, count), rs in per.items():
        best = None
        for r in rs:
            if r["batch"] > count and r["batch"] != 1:
                continue
            if best is None or r["batch"] > best["batch"]:
                best = r
        total[(model, preset)] += count * best["seconds_per_matrix"]
    print(f, "  ".join(f"{m} {p} {s * 1e3:.1f} ms" for (m, p), s in sorted(total.items())))
