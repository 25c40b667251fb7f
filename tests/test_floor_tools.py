#!/usr/bin/python3
"""Two pure pieces of issue 12's measurement tools, checked without a GPU:
- harness/tools/leave_one_out.py forced_ns_impl: which `dmuon-bench step` commands forced an NS
  kernel (their Muon optimizer rows are set aside, not compared);
- harness/tools/host_floor_fit.py (measure_host_floor.py's arithmetic) floor_depths,
  least_squares and median_over_processes: the depths the host floor is timed at for a model, the
  slope fitted over its runs, and one floor from several processes' (per depth the median);
- harness/tools/measure_whole.py measure_if_gpu_bound: when the whole model's plain timing is
  written (a GPU-bound run by the host floor) and that a failure leaves it out.

    /usr/bin/python3 tests/test_floor_tools.py     # CTest: floor_tools
"""

import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "harness", "tools"))
import leave_one_out  # noqa: E402

import host_floor_fit  # noqa: E402
import measure_whole  # noqa: E402


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
        self.assertEqual(d(36), (2, 6, 12, 36))
        self.assertEqual(d(24), (2, 6, 12, 24))
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

    @staticmethod
    def entry(mode, times, layers=(2, 6, 12)):
        return {"model": "qwen2.5-3b", "mode": mode, "micro_batch": 1, "seq_len": 32, "layers": list(layers),
                "fwd_bwd_s": list(times), "per_layer_s": 1.0, "per_step_s": 0.0}

    def test_median_over_processes_takes_each_depths_median_and_refits(self):
        m = host_floor_fit.median_over_processes
        e = self.entry
        # Three processes; the second's host ran 30% slow, the third's 10% fast: per depth the
        # median is the first's, on the line 1 ms + 2 ms a layer.
        line = [0.005, 0.013, 0.025]
        processes = [[e("eager", line), e("fsdp2", [2 * t for t in line])],
                     [e("eager", [1.3 * t for t in line]), e("fsdp2", [2.6 * t for t in line])],
                     [e("eager", [0.9 * t for t in line]), e("fsdp2", [1.8 * t for t in line])]]
        out = m(processes)
        self.assertEqual([x["mode"] for x in out], ["eager", "fsdp2"])
        self.assertEqual(out[0]["fwd_bwd_s"], line)
        self.assertAlmostEqual(out[0]["per_layer_s"], 0.002, places=12)
        self.assertAlmostEqual(out[0]["per_step_s"], 0.001, places=12)
        self.assertAlmostEqual(out[1]["per_layer_s"], 0.004, places=12)
        self.assertEqual(out[0]["model"], "qwen2.5-3b")
        # Per depth, not per process: each depth's median may come from another process.
        out = m([[e("eager", [0.005, 0.020, 0.025])], [e("eager", [0.007, 0.013, 0.030])], [e("eager", [0.004, 0.012, 0.027])]])
        self.assertEqual(out[0]["fwd_bwd_s"], [0.005, 0.013, 0.027])
        # One process alone is returned refitted, its times unchanged.
        self.assertEqual(m([[e("eager", line)]])[0]["fwd_bwd_s"], line)

    def test_median_over_processes_takes_each_mode_from_the_processes_that_measured_it(self):
        m = host_floor_fit.median_over_processes
        e = self.entry
        line = [0.005, 0.013, 0.025]
        # FSDP2 missing in two processes (torch.distributed failed there): its floor is the third's,
        # eager the median of all three.
        out = m([[e("eager", line), e("fsdp2", [2 * t for t in line])], [e("eager", [1.2 * t for t in line])],
                 [e("eager", [0.5 * t for t in line])]])
        self.assertEqual([x["mode"] for x in out], ["eager", "fsdp2"])
        self.assertEqual(out[0]["fwd_bwd_s"], line)
        self.assertAlmostEqual(out[1]["per_layer_s"], 0.004, places=12)
        # A process measured at other depths is left out of that mode, not mixed in.
        out = m([[e("eager", line)], [e("eager", [9.0, 9.0], layers=(2, 6))], [e("eager", line)]])
        self.assertEqual(out[0]["fwd_bwd_s"], line)
        self.assertEqual(out[0]["layers"], [2, 6, 12])
        # A slope that is not positive is no floor.
        self.assertEqual(m([[e("eager", [0.02, 0.02, 0.019])], [e("eager", [0.02, 0.02, 0.019])]]), [])
        with self.assertRaises(ValueError):
            m([])


class WholeModelGate(unittest.TestCase):
    class FakeCuda:
        def empty_cache(self):
            pass

    class FakeTorch:
        cuda = None

    def setUp(self):
        self.torch = self.FakeTorch()
        self.torch.cuda = self.FakeCuda()
        self.logged = []
        self.calls = []
        self.saved = measure_whole.measure

    def tearDown(self):
        measure_whole.measure = self.saved

    def result(self, block_s, floor_s):
        out = {"layers": [{"part": "block", "forward_s": block_s / 3, "backward_s": 2 * block_s / 3}]}
        if floor_s is not None:
            out["host_floor"] = [{"mode": "fsdp2", "per_layer_s": 1.0}, {"mode": "eager", "per_layer_s": floor_s}]
        return out

    def gate(self, result, measured=lambda *a: {"part": "whole"}):
        measure_whole.measure = lambda *a: (self.calls.append(a), measured(*a))[1]
        return measure_whole.measure_if_gpu_bound(self.torch, "cuda", {}, "qwen2", result, 3, self.logged.append)

    def test_written_only_when_gpu_bound(self):
        self.assertEqual(self.gate(self.result(0.0045, 0.0024)), {"part": "whole"})  # 4.5 ms >= 1.25 x 2.4
        self.assertIsNone(self.gate(self.result(0.0029, 0.0024)))  # 2.9 < 3.0: may hold host time
        self.assertIn("under 1.25 x", self.logged[-1])
        self.assertIsNone(self.gate(self.result(0.0045, None)))  # no floor measured: cannot tell
        self.assertIn("--host-floor", self.logged[-1])
        self.assertEqual(len(self.calls), 1)  # the model is built and run only when it will be kept

    def test_a_failure_leaves_it_out(self):
        def boom(*a):
            raise RuntimeError("CUDA out of memory")
        self.assertIsNone(self.gate(self.result(0.0045, 0.0024), boom))
        self.assertIn("whole FAILED (RuntimeError: CUDA out of memory)", self.logged[-1])


if __name__ == "__main__":
    unittest.main()
