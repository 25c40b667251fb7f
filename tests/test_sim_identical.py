#!/usr/bin/python3
"""harness/tools/sim_json_identical.py, the identity check of issue 15: two dmuon-sim outputs
(--json or --csv) agree within a relative tolerance, leaves that describe the run (wall times,
command, date, host, simulated_gpus) ignored, and any other difference found and named.

    /usr/bin/python3 tests/test_sim_identical.py     # CTest: sim_identical
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "harness", "tools", "sim_json_identical.py")

RUN = {"runs": [{"strategies": [{"strategy": "adamw", "step_seconds": 0.75, "sim_wall_seconds": 3.0,
                                 "simulated_gpus": 8, "collectives": 120}]}], "command": "dmuon-sim a"}
CSV = ("sweep_value,strategy,kind,group,start_seconds,seconds\n"
       "16,adamw,all_reduce,replicate[0],0.125,0.001\n"
       "16,adamw,all_gather,shard[0],0.25,0.002\n")


class Identical(unittest.TestCase):
    def run_tool(self, a, b, suffix, *extra):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for name, text in (("a", a), ("b", b)):
                paths.append(os.path.join(d, name + suffix))
                with open(paths[-1], "w") as f:
                    f.write(text)
            return subprocess.run([sys.executable, TOOL, *paths, *extra], capture_output=True, text=True)

    def json_pair(self, change):
        b = json.loads(json.dumps(RUN))
        change(b["runs"][0]["strategies"][0], b)
        return json.dumps(RUN), json.dumps(b)

    def test_run_descriptions_are_ignored(self):
        def change(s, b):
            s["sim_wall_seconds"] = 9.0
            s["simulated_gpus"] = 128
            b["command"] = "dmuon-sim --per-rank a"
        r = self.run_tool(*self.json_pair(change), ".json")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("0 differ", r.stdout)

    def test_a_prediction_that_moves_is_found(self):
        def change(s, b):
            s["step_seconds"] = 0.75 * (1 + 1e-6)
        r = self.run_tool(*self.json_pair(change), ".json")
        self.assertEqual(r.returncode, 1)
        self.assertIn("step_seconds", r.stdout)
        self.assertEqual(self.run_tool(*self.json_pair(change), ".json", "--rel", "1e-5").returncode, 0)

    def test_csv_rows_are_compared_column_by_column(self):
        self.assertEqual(self.run_tool(CSV, CSV, ".csv").returncode, 0)
        r = self.run_tool(CSV, CSV.replace("0.25,", "0.2500001,"), ".csv")
        self.assertEqual(r.returncode, 1)
        self.assertIn("[1].start_seconds", r.stdout)
        r = self.run_tool(CSV, CSV.replace("shard[0]", "shard[1]"), ".csv")
        self.assertEqual(r.returncode, 1)
        self.assertIn("[1].group", r.stdout)
        r = self.run_tool(CSV, CSV.rsplit("16,", 1)[0], ".csv")  # a row missing
        self.assertIn("[len]", r.stdout)

    def test_unreadable_input_exits_2(self):
        self.assertEqual(self.run_tool("{", "{}", ".json").returncode, 2)


if __name__ == "__main__":
    unittest.main()
