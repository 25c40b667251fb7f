#!/usr/bin/env python3
"""One measurement report from the same measurement run in several processes: every measured
figure is the median over the processes.

Why: on the GPU machines the host's pace differs from one process to the next by more than the
iterations of one process spread. Four `dmuon-bench step` processes of qwen2-0.5b on one H100
within a minute (2026-11-27) measured its adamw forward/backward collectives at 3.62-4.34 ms; the
in-place all-gathers, which the host paces, took 3.3-4.5 us each in one process and another.
A median over iterations of one process keeps that process's pace; a median over processes does
not. reports/sim-validation.md (section 0, "Stop 40") has the measurements.

    python3 harness/tools/median_of_processes.py OUT.json RUN1.json RUN2.json [RUN3.json ...]

Reads `dmuon-bench step` reports (a "strategies" list) or harness/tools/fsdp2_step.py reports
("tool": "fsdp2_step.py"), all of one kind, and writes OUT.json: the first report, where
  - every floating-point number is the median of that field over the reports (the mean of the
    middle two for an even count), and so is an integer byte count ("..._bytes", e.g. a peak
    allocation) where the reports differ;
  - every list of numbers, or of lists of numbers (per-iteration samples), is the reports' lists
    one after the other;
  - "date" is the first report's and "command" the first report's; both lists are kept whole in
    "processes";
  - "processes" lists, per report, its file, date, command and every floating-point field it
    replaced (dotted path -> that report's value), so no process's figure is lost.
Every other field (strings, other integers, booleans: the configuration) must be equal in every report,
and a list of objects (strategies, ranks) must have the same length and, per entry, the same
"strategy" or "rank"; otherwise it exits 1 with one line naming the file and the field. Exit 2 on
bad usage.
"""

import json
import statistics
import sys

import json_file  # harness/tools/, beside this script

KEEP_FIRST = ("date", "command")  # differ per process by nature; all of them go to "processes"


class MergeError(Exception):
    pass


def read(path):
    report = json_file.load(path, MergeError)
    if not isinstance(report, dict):
        raise MergeError(f"{path}: not a JSON object")
    if "processes" in report:
        raise MergeError(f"{path}: processes: already a median of processes")
    if report.get("tool") != "fsdp2_step.py" and not isinstance(report.get("strategies"), list):
        raise MergeError(f"{path}: neither a dmuon-bench step report (strategies) nor an fsdp2_step.py one (tool)")
    return report


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_number_list(v):
    """Per-iteration samples: a list of numbers, or of lists of numbers (one list per iteration)."""
    return isinstance(v, list) and all(is_number(x) or (isinstance(x, list) and all(map(is_number, x))) for x in v)


def entry_label(entry, index):
    """What names a list entry: a strategy's name, a rank's number, else its index."""
    return entry.get("strategy", entry.get("rank", index)) if isinstance(entry, dict) else index


def merge(values, files, where, replaced):
    """The merged value of `values` (one per report) at dotted path `where`."""
    first = values[0]
    measured_int = is_number(first) and isinstance(first, int) and where.endswith("_bytes") and len(set(map(repr, values))) > 1
    if isinstance(first, float) or measured_int:
        for v, f in zip(values, files):
            if not is_number(v):
                raise MergeError(f"{f}: {where}: {v!r} where {files[0]} has a number")
        for i, v in enumerate(values):
            replaced[i][where] = v
        median = statistics.median(float(v) for v in values)
        return round(median) if measured_int else median
    if isinstance(first, dict):
        for v, f in zip(values, files):
            if not isinstance(v, dict) or set(v) != set(first):
                raise MergeError(f"{f}: {where or 'top level'}: keys differ from {files[0]}'s")
        out = {}
        for key in first:
            if not where and key in KEEP_FIRST:
                out[key] = first[key]
                continue
            out[key] = merge([v[key] for v in values], files, f"{where}.{key}" if where else key, replaced)
        return out
    if is_number_list(first):
        for v, f in zip(values, files):
            if not is_number_list(v):
                raise MergeError(f"{f}: {where}: not a list of numbers as in {files[0]}")
        return [x for v in values for x in v]
    if isinstance(first, list):
        for v, f in zip(values, files):
            if not isinstance(v, list) or len(v) != len(first):
                raise MergeError(f"{f}: {where}: {len(v) if isinstance(v, list) else 'no'} entries, {files[0]} has {len(first)}")
        out = []
        for i in range(len(first)):
            label = entry_label(first[i], i)
            for v, f in zip(values, files):
                other = entry_label(v[i], i)
                if other != label:
                    raise MergeError(f"{f}: {where}[{i}]: {other!r} where {files[0]} has {label!r}")
            out.append(merge([v[i] for v in values], files, f"{where}[{label}]", replaced))
        return out
    for v, f in zip(values, files):
        if v != first:
            raise MergeError(f"{f}: {where}: {v!r} differs from {files[0]}'s {first!r} (a different run, not another process of it)")
    return first


def median_of_processes(files):
    reports = [read(f) for f in files]
    kinds = {r.get("tool", "dmuon-bench step") for r in reports}
    if len(kinds) != 1:
        raise MergeError(f"{files[0]}: tool: the reports are of different tools ({', '.join(sorted(kinds))})")
    replaced = [{} for _ in reports]
    merged = merge(reports, files, "", replaced)
    merged["processes"] = [{"file": f, "date": r.get("date"), "command": r.get("command"), "values": rep}
                           for f, r, rep in zip(files, reports, replaced)]
    return merged


def main(argv):
    if len(argv) < 3:
        print("usage: median_of_processes.py OUT.json RUN1.json RUN2.json [RUN3.json ...]", file=sys.stderr)
        return 2
    out, files = argv[0], argv[1:]
    try:
        merged = median_of_processes(files)
    except MergeError as e:
        print(f"median_of_processes.py: {e}", file=sys.stderr)
        return 1
    with open(out, "w") as f:
        json.dump(merged, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
