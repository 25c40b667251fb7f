#!/usr/bin/python3
"""The committed leave-one-out (reports/sim-validation-loo.json) is what harness/tools/leave_one_out.py
makes from the committed measurements and calibrations with this build's dmuon-sim: a calibration,
a measurement or the simulator changed without the report regenerated fails here, naming the row.
Also that an earlier lease's compute-only and FSDP2 runs are read (compute/, fsdp2/), not only its
step reports.

    /usr/bin/python3 tests/test_leave_one_out_committed.py DMUON_SIM     # CTest: leave_one_out_committed

Writes only inside its own temporary directory.
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "harness", "dmuon-sim")
# The simulator's figures may differ in the last bits between builds (Release, sanitizers).
REL = 1e-6


def row_key(r):
    return (r["machine"], r.get("lease", ""), r["configuration"], r["strategy"], r["quantity"])


class LeaveOneOutCommitted(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ROOT, "reports", "sim-validation-loo.json")) as f:
            cls.committed = json.load(f)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "loo.json")
            subprocess.run([sys.executable, "harness/tools/leave_one_out.py", "--sim", SIM, "--json", out,
                            "--markdown", os.path.join(tmp, "loo.md")], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL)
            with open(out) as f:
                cls.fresh = json.load(f)

    def assert_same(self, a, b, where):
        if isinstance(a, float) or isinstance(b, float):
            self.assertTrue(math.isclose(a, b, rel_tol=REL, abs_tol=1e-12), f"{where}: committed {a}, now {b}")
        elif isinstance(a, dict):
            self.assertEqual(sorted(a), sorted(b), where)
            for k in a:
                self.assert_same(a[k], b[k], f"{where}.{k}")
        elif isinstance(a, list):
            self.assertEqual(len(a), len(b), where)
            for i, (x, y) in enumerate(zip(a, b)):
                self.assert_same(x, y, f"{where}[{i}]")
        else:
            self.assertEqual(a, b, where)

    def test_summary_is_regenerated(self):
        self.assert_same(self.committed["summary"], self.fresh["summary"], "summary")

    def test_every_row_is_regenerated(self):
        for part in ("rows", "earlier_lease_rows", "memory_rows", "not_compared"):
            committed, fresh = self.committed[part], self.fresh[part]
            self.assertEqual([row_key(r) if "strategy" in r else r for r in committed],
                             [row_key(r) if "strategy" in r else r for r in fresh], part)
            for c, n in zip(committed, fresh):
                self.assert_same(c, n, f"{part} {row_key(c)}")

    def test_an_earlier_lease_reads_its_compute_and_fsdp2_runs(self):
        quantities = {(r["lease"], r["quantity"]) for r in self.fresh["earlier_lease_rows"]}
        self.assertIn(("2xh100 2026-11-27 00:42", "fwd+bwd (FSDP2 + AdamW)"), quantities)
        self.assertIn(("1xh100 2026-11-27 14:46", "fwd+bwd compute (no FSDP)"), quantities)
        self.assertIn(("2xh100 2026-11-27 00:42", "optimizer step"), quantities)


if __name__ == "__main__":
    unittest.main()
