#!/usr/bin/python3
"""harness/tools/median_of_processes.py: one report from the same measurement run in several
processes. Every measured figure is the median over the processes, per-iteration samples are
joined, each process's replaced values are kept, and the merged `dmuon-bench step` report still
reads in `dmuon-sim --validate`; reports of different runs are refused with the file and field
named.

    /usr/bin/python3 tests/test_median_of_processes.py [DMUON-SIM]   # CTest: median_of_processes

Files are written in the test's own temporary directory.
"""

import copy
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "harness", "tools"))
import median_of_processes as mop  # noqa: E402
from tool_test_support import TempDirCase  # noqa: E402 (tests/, beside this file)

SIM = sys.argv[1] if len(sys.argv) > 1 else None
# A committed step report (1 x H100, qwen2-0.5b): the merged report must stay one --validate reads.
STEP = os.path.join(ROOT, "reports", "measured", "1xh100", "process-spread-2026-11-27", "first-steps",
                    "step-qwen2-0.5b-torch-1xh100.json")


def step_report(comm, optimizer, samples, date="2026-11-27 12:00:00 UTC"):
    rank = {"rank": 0, "fwd_bwd_comm_seconds": comm, "allocated_bytes": 7904524288.0, "staged_ns_calls": 0}
    return {"command": "dmuon-bench step --scenario s.yaml", "date": date, "machine": "m", "world": 1, "iterations": 3,
            "strategies": [{"strategy": "adamw", "fwd_bwd_comm_seconds_median": comm,
                            "optimizer_step_seconds_median": optimizer, "optimizer_step_seconds_samples": samples,
                            "ranks": [rank]}]}


def fsdp2_report(fwd_bwd, peak, per_iteration):
    return {"tool": "fsdp2_step.py", "model": "qwen2.5-1.5b", "mode": "fsdp2", "world": 2, "micro_batch": 2,
            "seq_len": 2048, "num_layers": 28, "fwd_bwd_seconds_median": fwd_bwd, "peak_allocated_bytes": peak,
            "versions": {"torch": "2.11"}, "per_iteration_seconds": per_iteration, "date": "d", "command": "c"}


class MedianOfProcesses(TempDirCase):
    def merged(self, *reports):
        files = [self.write(f"r{i}.json", r) for i, r in enumerate(reports)]
        out = os.path.join(self.tmp.name, "out.json")
        self.assertEqual(mop.main([out, *files]), 0)
        with open(out) as f:
            return json.load(f), files

    def test_step_reports_median_samples_and_processes(self):
        m, files = self.merged(step_report(0.0041, 0.0054, [0.0054, 0.0055], "a"),
                               step_report(0.0043, 0.0056, [0.0056], "b"),
                               step_report(0.0036, 0.0055, [0.0053], "c"))
        s = m["strategies"][0]
        self.assertEqual(s["fwd_bwd_comm_seconds_median"], 0.0041)  # the median, not the mean (0.004)
        self.assertEqual(s["optimizer_step_seconds_median"], 0.0055)
        self.assertEqual(s["ranks"][0]["fwd_bwd_comm_seconds"], 0.0041)
        self.assertEqual(s["optimizer_step_seconds_samples"], [0.0054, 0.0055, 0.0056, 0.0053])
        self.assertEqual((m["iterations"], m["machine"], m["date"]), (3, "m", "a"))
        self.assertEqual([p["date"] for p in m["processes"]], ["a", "b", "c"])
        self.assertEqual([p["file"] for p in m["processes"]], files)
        self.assertEqual(m["processes"][2]["values"]["strategies[adamw].fwd_bwd_comm_seconds_median"], 0.0036)
        self.assertEqual(m["processes"][1]["values"]["strategies[adamw].ranks[0].fwd_bwd_comm_seconds"], 0.0043)

    def test_even_count_takes_the_middle_two(self):
        m, _ = self.merged(step_report(0.002, 0.005, []), step_report(0.004, 0.005, []))
        self.assertAlmostEqual(m["strategies"][0]["fwd_bwd_comm_seconds_median"], 0.003, places=15)

    def test_fsdp2_reports_and_a_differing_peak(self):
        m, _ = self.merged(fsdp2_report(0.29, 29324193792, [[0.29, 0.03]]),
                           fsdp2_report(0.31, 29324193794, [[0.31, 0.03], [0.30, 0.03]]),
                           fsdp2_report(0.27, 29324193792, [[0.27, 0.03]]))
        self.assertEqual(m["fwd_bwd_seconds_median"], 0.29)
        self.assertEqual(m["peak_allocated_bytes"], 29324193792)
        self.assertIsInstance(m["peak_allocated_bytes"], int)
        self.assertEqual(len(m["per_iteration_seconds"]), 4)
        self.assertEqual(m["versions"], {"torch": "2.11"})
        self.assertEqual(m["processes"][1]["values"]["peak_allocated_bytes"], 29324193794)

    def refused(self, reports, message):
        files = [self.write(f"r{i}.json", r) for i, r in enumerate(reports)]
        out = os.path.join(self.tmp.name, "refused.json")
        with self.assertRaises(mop.MergeError) as e:
            mop.median_of_processes(files)
        self.assertIn(message, str(e.exception))
        self.assertEqual(mop.main([out, *files]), 1)
        self.assertFalse(os.path.exists(out))

    def test_other_runs_are_refused_naming_file_and_field(self):
        a = step_report(0.004, 0.005, [])
        other = copy.deepcopy(a)
        other["machine"] = "n"
        self.refused([a, other], "r1.json: machine: 'n' differs")
        other = copy.deepcopy(a)
        other["iterations"] = 5
        self.refused([a, other], "r1.json: iterations: 5 differs")
        other = copy.deepcopy(a)
        other["strategies"][0]["strategy"] = "dedicated"
        self.refused([a, other], "r1.json: strategies[0]: 'dedicated' where")
        other = copy.deepcopy(a)
        other["strategies"].append(copy.deepcopy(a["strategies"][0]))
        self.refused([a, other], "r1.json: strategies: 2 entries")
        other = copy.deepcopy(a)
        other["strategies"][0]["ranks"][0]["staged_ns_calls"] = 1  # an integer that is no byte count
        self.refused([a, other], "staged_ns_calls: 1 differs")
        self.refused([a, fsdp2_report(0.3, 1, [])], "tools")
        self.refused([a, {"x": 1}], "r1.json: neither")
        merged = dict(a, processes=[])
        self.refused([a, merged], "r1.json: processes: already a median")

    def test_usage(self):
        self.assertEqual(mop.main(["out.json", "one.json"]), 2)

    @unittest.skipIf(SIM is None, "no dmuon-sim given")
    def test_the_merged_step_report_reads_in_validate(self):
        with open(STEP) as f:
            report = json.load(f)
        slow = copy.deepcopy(report)
        for s in slow["strategies"]:
            s["fwd_bwd_comm_seconds_median"] *= 1.5
        m, _ = self.merged(report, slow, report)
        out = os.path.join(self.tmp.name, "v.json")
        p = subprocess.run([SIM, "--validate", os.path.join(self.tmp.name, "out.json"), "--json", out,
                            "--calibration", os.path.join(ROOT, "scenarios", "calibration", "h100-sxm.yaml")],
                           capture_output=True, text=True, cwd=ROOT)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        with open(out) as f:
            rows = json.load(f)["rows"]
        comm = {r["strategy"]: r["measured_seconds"] for r in rows if r["quantity"] == "fwd/bwd collectives"}
        for s in report["strategies"]:
            self.assertEqual(comm[s["strategy"]], s["fwd_bwd_comm_seconds_median"])  # the median: the unslowed one


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
