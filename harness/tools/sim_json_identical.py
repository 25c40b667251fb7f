#!/usr/bin/env python3
"""Whether two dmuon-sim --json outputs predict the same: every leaf compared, except what
describes the run rather than the prediction (command, date, host, the *wall* timings and
simulated_gpus, which the replica lockstep changes without changing a date).
Numbers may differ by --rel relative (default 1e-9, issue 15's identity bound); everything else
must be equal. Prints each difference (at most --show) and the count of leaves compared; exits 1
on a difference, 2 on unreadable input. Two --csv outputs (every collective's kind, group,
start and seconds) are compared the same way, row by row.

    harness/tools/sim_json_identical.py before.json after.json [--rel 1e-9]
    harness/tools/sim_json_identical.py before.csv after.csv
"""
import argparse
import csv
import json
import sys

SKIPPED = {"command", "date", "host", "simulated_gpus"}


def skipped(key):
    return key in SKIPPED or "wall" in key


def compare(a, b, path, rel, out):
    """Appends (path, a, b) for each differing leaf to out; returns the leaves compared."""
    if isinstance(a, dict) and isinstance(b, dict):
        n = 0
        for k in sorted(set(a) | set(b)):
            if skipped(k):
                continue
            if k not in a or k not in b:
                out.append((f"{path}.{k}", a.get(k, "<absent>"), b.get(k, "<absent>")))
                continue
            n += compare(a[k], b[k], f"{path}.{k}", rel, out)
        return n
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append((f"{path}[len]", len(a), len(b)))
            return 1
        return sum(compare(x, y, f"{path}[{i}]", rel, out) for i, (x, y) in enumerate(zip(a, b)))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if a != b and abs(a - b) > rel * max(abs(a), abs(b)):
            out.append((path, a, b))
        return 1
    if a != b:
        out.append((path, a, b))
    return 1


def number_or_text(x):
    try:
        return int(x)
    except ValueError:
        try:
            return float(x)
        except ValueError:
            return x


def load(path):
    """A --json output as parsed, a --csv output as its rows (column -> number or text)."""
    with open(path, newline="") as f:
        if path.endswith(".csv"):
            return [{k: number_or_text(v) for k, v in row.items()} for row in csv.DictReader(f)]
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rel", type=float, default=1e-9, help="relative tolerance for numbers (default 1e-9)")
    ap.add_argument("--show", type=int, default=20, help="differences printed at most (default 20)")
    args = ap.parse_args()
    try:
        a, b = load(args.before), load(args.after)
    except (OSError, ValueError, csv.Error) as e:
        print(f"sim_json_identical.py: {e}", file=sys.stderr)
        return 2
    diffs = []
    n = compare(a, b, "$", args.rel, diffs)
    for path, x, y in diffs[: args.show]:
        print(f"{path}: {x!r} -> {y!r}")
    print(f"{n} leaves compared, {len(diffs)} differ (relative tolerance {args.rel:g})")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
