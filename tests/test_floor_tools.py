#!/usr/bin/python3
"""Two pure pieces of issue 12's measurement tools, checked without a GPU:
- harness/tools/leave_one_out.py forced_ns_impl: which `dmuon-bench step` commands forced an NS
  kernel (their Muon optimizer rows are set aside, not compared);
- harness/tools/host_floor_fit.py (measure_host_floor.py's arithmetic) floor_depths and
  least_squares: the depths the host floor is timed at for a model, and the slope fitted over its
  runs.

    /usr/bin/python3 tests/test_floor_tools.py     # CTest: floor_tools
"""

import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "harness", "tools"))
import leave_one_out  # noqa: E402

import host_floor_fit  # noqa: E402


class ForcedNsImpl(unittest.TestCase):
    def test_forced_kernels_are_named(self):
        f = leave_one_out.forced_ns_impl
        self.assertIsNone(f("dmuon-bench step --scenario s.yaml --warmup 2"))
        self.assertIsNone(f("dmuon-bench step --ns-impl automatic --scenario s.yaml"))
        self.assertEqual(f("dmuon-bench step --scenario s.yaml --ns-impl standard --warmup 2"), "standard")
        self.assertEqual(f("dmuon-bench step --ns-impl=gram"), "gram")
        self.assertIsNone(f("dmuon-bench step --ns-impl"))  # no value: nothing was forced
        self.assertIsNone(f(""))


class HostFloorFit(unittest.TestCase):
    def test_depths(self):
        d = host_floor_fit.floor_depths
        self.assertEqual(d(36), (2, 6, 12))
        self.assertEqual(d(12), (2, 6, 12))
        self.assertEqual(d(8), (2, 6, 8))
        self.assertEqual(d(4), (2, 4))
        self.assertEqual(d(2), (1, 2))
        self.assertEqual(d(1), (1,))

    def test_least_squares_recovers_a_line_and_averages_noise(self):
        ls = host_floor_fit.least_squares
        slope, icpt = ls([(2, 0.005), (6, 0.013), (12, 0.025)])
        self.assertAlmostEqual(slope, 0.002, places=12)
        self.assertAlmostEqual(icpt, 0.001, places=12)
        # Two passes, the second 10% slower at one depth: the fit sits between, not on either.
        slope, _ = ls([(2, 0.005), (6, 0.013), (12, 0.025), (12, 0.0275), (6, 0.013), (2, 0.005)])
        self.assertGreater(slope, 0.002)
        self.assertLess(slope, (0.0275 - 0.005) / 10)


if __name__ == "__main__":
    unittest.main()
