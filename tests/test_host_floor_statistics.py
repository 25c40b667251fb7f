#!/usr/bin/python3
"""harness/tools/host_floor_statistics.py on the committed leases: its one-rank line puts the floor
the committed 2-GPU calibrations carry since stop 42 (harness/tools/one_rank_floor.py), so its
one-rank rows of the committed leases must give the leave-one-out's FSDP2 errors
(reports/sim-validation-loo.json, the current files' rows and an earlier lease's); every lease prints its three statistics of the 2-GPU floor runs
and the one-rank line, and the lower statistics never price a step above the median one (a lower
host floor cannot make a step longer).

    /usr/bin/python3 tests/test_host_floor_statistics.py DMUON_SIM     # CTest: host_floor_statistics

Writes nothing (the tool keeps its calibration in a temporary directory).
"""

import json
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "harness", "dmuon-sim")
ROW = re.compile(r"^(.+?)\s+(median|q25|min|one-rank)\s+floor .*\| (.*)$")


class HostFloorStatistics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        out = subprocess.run([sys.executable, "harness/tools/host_floor_statistics.py", "--sim", SIM], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        cls.rows = {}
        for line in out.splitlines():
            m = ROW.match(line)
            if m:
                cells = dict(c.rsplit(" ", 1) for c in m.group(3).split("; "))
                cls.rows[(m.group(1).strip(), m.group(2))] = {k: float(v.rstrip("%")) for k, v in cells.items()}

    def test_every_lease_and_statistic(self):
        leases = {lease for lease, _ in self.rows}
        self.assertEqual(len(leases), 7)
        for lease in leases:
            for how in ("median", "q25", "min", "one-rank"):
                self.assertIn((lease, how), self.rows)
                self.assertGreaterEqual(len(self.rows[(lease, how)]), 3)

    def test_one_rank_is_the_committed_floor(self):
        loo = json.load(open(os.path.join(ROOT, "reports", "sim-validation-loo.json")))
        # 2 x H200's current file, and 2 x H100's stop-42 lease (an earlier lease since stop 46)
        rows = {"2xh200 01:02": [r for r in loo["rows"] if r["machine"] == "2xh200"],
                "2xh100 16:38": [r for r in loo["earlier_lease_rows"] if r["lease"] == "2xh100 2026-11-27 16:38"]}
        checked = 0
        for lease, lease_rows in rows.items():
            for r in lease_rows:
                if "FSDP2" not in r["quantity"]:
                    continue
                model = r["configuration"].split("-torch")[0]
                self.assertAlmostEqual(self.rows[(lease, "one-rank")][model], 100 * r["calibrated_error"], delta=0.06)
                checked += 1
        self.assertEqual(checked, 7)

    def test_the_refit_reaches_the_simulator(self):
        # Every lease's floor runs spread, so the fastest iterations move some host-bound step.
        for lease in {lease for lease, _ in self.rows}:
            moved = [m for m, e in self.rows[(lease, "min")].items() if abs(e - self.rows[(lease, "median")][m]) > 0.5]
            self.assertTrue(moved, lease)

    def test_a_lower_floor_never_prices_a_step_higher(self):
        for (lease, how), cells in self.rows.items():
            if how in ("median", "one-rank"):  # one-rank: another measurement, not a lower statistic
                continue
            for model, error in cells.items():
                # Both depths' times are at most the medians, so the line is lower at every depth
                # between them (all these models have 28-36 layers, the runs 18 and 36).
                self.assertLessEqual(error, self.rows[(lease, "median")][model] + 0.06, f"{lease} {how} {model}")


if __name__ == "__main__":
    unittest.main()
