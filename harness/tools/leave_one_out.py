#!/usr/bin/env python3
"""Issue 12's leave-one-out validation, re-run from the committed measurements.

For every measured report under reports/measured/<machine>/ (dmuon-bench step JSONs and
fsdp2_step.py compute-only JSONs), runs `dmuon-sim --validate` twice: with the machine's
calibration (measured on the calibration scenario's model only) and without any (the datasheet
roofline and flat MFU the simulator used before), and writes
  - a JSON with every row (predicted/measured, both ways, and whether the configuration's model
    was the calibration's),
  - a Markdown table per machine, for reports/sim-validation.md,
  - the memory rows of --validate (unit "bytes": executor buffers against the executor layout
    of core/cost/executor_memory.hpp, fsdp2 peak against memory_per_gpu) in their own JSON list
    and Markdown table, from the run planned as the benchmark was (calibrated when its command
    names --calibration: owners follow the cost model); not counted in the time rows'
    within-10% figures,
  - with --parity PREFIX, PREFIX-calibrated.json and PREFIX-datasheet.json: the rows of models
    outside the calibration in `dmuon-sim --validate --json`'s row format, for
    `harness/tools/plot.py parity`.
EARLIER_LEASE_STAMPS adds earlier leases of a machine, each calibration against the step reports,
compute-only and FSDP2 runs of its own lease (steps/, compute/, fsdp2/): their rows go to "earlier_lease_rows" and per lease to the summary's "earlier_leases", and
their tables follow the machine's; the headline figures stay the current files'.
A report whose command forced an NS kernel (`--ns-impl X`) keeps its adamw and collective rows;
its Muon optimizer rows are listed under "Rows not compared" with the reason, not counted.

  python3 harness/tools/leave_one_out.py --sim build/harness/dmuon-sim \
      --json reports/sim-validation-loo.json --markdown reports/sim-validation-loo.md
Run from the repository root. Exit 1 when a dmuon-sim call fails.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

# machine folder -> (calibration file, the scenario it was measured on)
MACHINES = {
    "1xh100": ("scenarios/calibration/h100-sxm.yaml", "scenarios/validation/qwen2.5-3b-dmuon-1xh100.yaml"),
    "2xh200": ("scenarios/calibration/h200.yaml", "scenarios/validation/qwen2.5-3b-dmuon-2xh200.yaml"),
    "1xh200": ("scenarios/calibration/h200-x1.yaml", "scenarios/validation/qwen2.5-3b-dmuon-1xh200.yaml"),
    "2xh100": ("scenarios/calibration/h100-sxm-x2.yaml", "scenarios/validation/qwen2.5-3b-dmuon-2xh100.yaml"),
}
CALIBRATION_MODEL = "qwen2.5-3b"
# Earlier leases of a machine, each its own calibration against its own steps (the same code):
# machine -> the stamps of its lease folders, reports/measured/<machine>/lease-<stamp>/ with steps/
# and calibrate/<the machine's calibration file name>, measured on the machine's calibration
# scenario. Not in the summary's headline figures, which are the current files'; in
# "earlier_leases", so that the spread from one lease of the same machine to the next stays in view.
EARLIER_LEASE_STAMPS = {
    "1xh100": ["2026-11-26-2343", "2026-11-27-1246", "2026-11-27-1257", "2026-11-27-1446", "2026-11-27-1509", "2026-11-27-1910", "2026-11-27-2033"],
    "2xh100": ["2026-11-27-0042", "2026-11-27-1638"],
}


def earlier_leases():
    """label ("1xh100 2026-11-26 23:43") -> (its lease folder, its calibration, the scenario it was
    measured on, machine), from EARLIER_LEASE_STAMPS."""
    out = {}
    for machine, stamps in EARLIER_LEASE_STAMPS.items():
        calibration, scenario = MACHINES[machine]
        for stamp in stamps:
            folder = f"reports/measured/{machine}/lease-{stamp}"
            label = f"{machine} {stamp[:10]} {stamp[11:13]}:{stamp[13:15]}"
            out[label] = (folder, f"{folder}/calibrate/{os.path.basename(calibration)}", scenario, machine)
    return out


EARLIER_LEASES = earlier_leases()


def run_validate(sim, measured, scenario, calibration):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "v.json")
        cmd = [sim, "--validate", measured, "--json", out]
        if scenario:
            cmd += ["--scenario", scenario]
        if calibration:
            cmd += ["--calibration", calibration]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode not in (0, 1) or not os.path.exists(out):
            sys.exit(f"leave_one_out.py: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
        with open(out) as f:
            return json.load(f)


def rows_of(validation):
    out = []
    for r in validation["rows"]:
        unit = r.get("unit", "s")
        if unit != "s":
            continue
        out.append((r["strategy"], r["quantity"], r["predicted_seconds"], r["measured_seconds"]))
    return out


def is_standin(path):
    """A `dmuon-bench step --compute-standin` report times whole steps with stand-in GEMMs, a
    quantity `dmuon-sim --validate` does not predict; it is left out of this comparison."""
    with open(path) as f:
        j = json.load(f)
    return any(s.get("compute_standin") for s in j.get("strategies", []))


def forced_ns_impl(command):
    """The NS implementation a `dmuon-bench step` command forced (`--ns-impl X`, X not
    automatic), else None: the simulator prices the calibration's tuned kernels, so a Muon
    strategy's optimizer step measured with another kernel is not a prediction to compare."""
    words = command.split()
    for i, w in enumerate(words):
        value = words[i + 1] if w == "--ns-impl" and i + 1 < len(words) else w[len("--ns-impl="):] if w.startswith("--ns-impl=") else None
        if value and value != "automatic":
            return value
    return None


def memory_rows_of(validation):
    """The memory rows (unit "bytes") of one --validate JSON: strategy, quantity, bytes."""
    return [(r["strategy"], r["quantity"], r["predicted"], r["measured"])
            for r in validation["rows"] if r.get("unit", "s") == "bytes"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sim", default="build/harness/dmuon-sim")
    p.add_argument("--json", required=True)
    p.add_argument("--markdown", required=True)
    p.add_argument("--parity", help="also write PREFIX-calibrated.json and PREFIX-datasheet.json")
    a = p.parse_args()
    everything, md, memory, memory_md, excluded, not_compared = [], [], [], [], [], []
    earlier = []  # rows of EARLIER_LEASES
    # (pattern, the prefix its reports' names lack): a machine's folder names its reports step-,
    # compute- and fsdp2-<scenario name>.json; a lease folder keeps them in steps/, compute/, fsdp2/
    # (device_validate.sh), the last two without the prefix.
    machine_files = [("*.json", "")]
    lease_files = [("steps/step-*.json", ""), ("compute/*.json", "compute-"), ("fsdp2/*.json", "fsdp2-")]
    sources = [(machine, f"reports/measured/{machine}", machine_files, calibration, scenario, None)
               for machine, (calibration, scenario) in MACHINES.items()]
    sources += [(machine, folder, lease_files, calibration, scenario, label)
                for label, (folder, calibration, scenario, machine) in EARLIER_LEASES.items()]
    for machine, folder, patterns, calibration, calibration_scenario, lease in sources:
        # Chrome traces sit beside the reports they belong to; they are not measurements to compare.
        files = sorted((prefix + os.path.basename(f)[:-5], f)
                       for pattern, prefix in patterns for f in glob.glob(f"{folder}/{pattern}")
                       if not f.endswith("-trace.json") and not is_standin(f))
        if not files:
            continue
        heading = f"earlier lease {lease}" if lease else machine
        md += [f"### {heading} (calibration `{calibration}`, measured on `{calibration_scenario}`)", "",
               "| configuration | strategy | quantity | measured ms | datasheet ms | error | calibrated ms | error | in calibration |",
               "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
        for name, f in files:
            config = name.split("-", 1)[1]  # step- / compute- / fsdp2-<scenario name>
            scenario = f"scenarios/validation/{config}.yaml" if name.startswith(("compute-", "fsdp2-")) else None
            datasheet = run_validate(a.sim, f, scenario, None)
            calibrated = run_validate(a.sim, f, scenario, calibration)
            before, after = rows_of(datasheet), rows_of(calibrated)
            # The executor's buffers follow the Plan, and owner assignment follows the cost model:
            # compare with the Plan of the cost model the benchmark planned with (its command).
            with open(f) as report:
                command = json.load(report).get("command", "")
            bench_calibrated = "--calibration" in command
            forced = forced_ns_impl(command)
            for s, q, pb, mb in ([] if lease else memory_rows_of(calibrated if bench_calibrated else datasheet)):
                memory.append({"machine": machine, "configuration": config, "measured_file": f, "strategy": s,
                               "quantity": q, "measured_bytes": mb, "predicted_bytes": pb, "error": pb / mb - 1,
                               "planned_with": calibration if bench_calibrated else "datasheet"})
            seen = config.startswith(CALIBRATION_MODEL + "-")
            for (s, q, pb, m), (_, _, pa, _) in zip(before, after):
                eb, ea = pb / m - 1, pa / m - 1
                if forced and s != "adamw" and q == "optimizer step":
                    why = f"--ns-impl {forced}: NS kernel forced, the simulator prices the tuned ones"
                    not_compared.append({"machine": machine, "configuration": config, "measured_file": f, "strategy": s,
                                         "quantity": q, "measured_seconds": m, "calibrated_seconds": pa, "why": why})
                    excluded.append(f"| {machine} | {config} | {s} | {q} | {m * 1e3:.2f} | {pa * 1e3:.2f} | `{why}` |")
                    continue
                row = {"machine": machine, "configuration": config, "measured_file": f, "strategy": s,
                       "quantity": q, "measured_seconds": m, "datasheet_seconds": pb,
                       "datasheet_error": eb, "calibrated_seconds": pa, "calibrated_error": ea,
                       "calibration": calibration, "model_in_calibration": seen}
                if lease:
                    earlier.append(dict(row, lease=lease))
                else:
                    everything.append(row)
                md.append(f"| {config} | {s} | {q} | {m * 1e3:.2f} | {pb * 1e3:.2f} | {eb * 100:+.1f}% | "
                          f"{pa * 1e3:.2f} | {ea * 100:+.1f}% | {'yes' if seen else 'no'} |")
        md.append("")
    if excluded:
        md += ["### Rows not compared", "",
               "| machine | configuration | strategy | quantity | measured ms | calibrated ms | why |",
               "| --- | --- | --- | --- | ---: | ---: | --- |"] + excluded + [""]
    if memory:
        memory_md += ["### Memory per GPU (Plans of the cost model each benchmark planned with)", "",
                      "| machine | configuration | strategy | quantity | measured GiB | predicted GiB | error |",
                      "| --- | --- | --- | --- | ---: | ---: | ---: |"]
        memory_md += [f"| {r['machine']} | {r['configuration']} | {r['strategy']} | {r['quantity']} | "
                      f"{r['measured_bytes'] / 2**30:.2f} | {r['predicted_bytes'] / 2**30:.2f} | {r['error'] * 100:+.1f}% |"
                      for r in memory]
        memory_md.append("")
    def within(rows, key):
        return sum(abs(r[key]) <= 0.10 for r in rows)

    def worst(rows, key):
        return max((abs(r[key]) for r in rows), default=0)

    unseen = [r for r in everything if not r["model_in_calibration"]]
    summary = {
        "rows": len(everything),
        "unseen_rows": len(unseen),
        "unseen_within_10pct_calibrated": within(unseen, "calibrated_error"),
        "unseen_within_10pct_datasheet": within(unseen, "datasheet_error"),
        "unseen_max_abs_error_calibrated": worst(unseen, "calibrated_error"),
        "unseen_max_abs_error_datasheet": worst(unseen, "datasheet_error"),
        "memory_rows": len(memory),
        "memory_within_10pct": within(memory, "error"),
        "memory_max_abs_error": worst(memory, "error"),
        "earlier_leases": {},
    }
    for label in EARLIER_LEASES:
        rows = [r for r in earlier if r["lease"] == label and not r["model_in_calibration"]]
        summary["earlier_leases"][label] = {
            "unseen_rows": len(rows),
            "unseen_within_10pct_calibrated": within(rows, "calibrated_error"),
            "unseen_max_abs_error_calibrated": worst(rows, "calibrated_error"),
        }
    with open(a.json, "w") as f:
        json.dump({"tool": "harness/tools/leave_one_out.py", "summary": summary, "rows": everything,
                   "memory_rows": memory, "not_compared": not_compared, "earlier_lease_rows": earlier}, f, indent=1)
        f.write("\n")
    with open(a.markdown, "w") as f:
        f.write("\n".join(md + memory_md) + "\n")
    if a.parity:
        for way in ("calibrated", "datasheet"):
            rows = [{"strategy": f"{r['configuration']} {r['strategy']}", "quantity": r["quantity"], "unit": "s",
                     "predicted_seconds": r[f"{way}_seconds"], "measured_seconds": r["measured_seconds"]}
                    for r in unseen]
            with open(f"{a.parity}-{way}.json", "w") as f:
                json.dump({"machine": way, "tool": "harness/tools/leave_one_out.py", "rows": rows}, f, indent=1)
                f.write("\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
