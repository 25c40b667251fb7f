#!/usr/bin/python3
"""Two pure pieces of issue 12's measurement tools, checked without a GPU:
- harness/tools/leave_one_out.py forced_ns_impl: which `dmuon-bench step` commands forced an NS
  kernel (their Muon optimizer rows are set aside, not compared);
- harness/tools/host_floor_fit.py (measure_host_floor.py's arithmetic) floor_depths,
  least_squares and median_over_processes: the depths the host floor is timed at for a model, the
  slope fitted over its runs, and one floor from several processes' (per depth the median);
- harness/tools/measure_whole.py measure_if_gpu_bound: when the whole model's plain timing is
  written (a GPU-bound run by the host floor) and that a failure leaves it out;
- harness/tools/one_rank_floor.py: the one-rank FSDP2 floor re-derived from a calibration call's
  log (several processes, one process) and put in place of a calibration's fsdp2 row.

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
import one_rank_floor  # noqa: E402


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

    def test_fit_runs_means_each_depth_and_fits_every_run(self):
        runs = [(2, 0.005), (6, 0.013), (12, 0.025), (12, 0.0275), (6, 0.013), (2, 0.005)]
        depths, means, slope, icpt = host_floor_fit.fit_runs(runs)
        self.assertEqual(depths, [2, 6, 12])
        for got, want in zip(means, [0.005, 0.013, 0.02625]):
            self.assertAlmostEqual(got, want, places=15)
        self.assertEqual(len(means), 3)
        self.assertEqual((slope, icpt), host_floor_fit.least_squares(runs))

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


class OneRankFloor(unittest.TestCase):
    # A calibration's host_floor block as dmuon-bench calibrate writes it.
    CALIBRATION = (
        "# header\n"
        "forward_backward:\n"
        "  host_floor:\n"
        '    - {model: "qwen2.5-3b", mode: eager, micro_batch: 1, seq_len: 32, layers: [2, 6], fwd_bwd_s: [0.005, 0.013], per_layer_s: 0.002, per_step_s: 0.001}\n'
        '    - {model: "qwen2.5-3b", mode: fsdp2, micro_batch: 1, seq_len: 32, world: 2, layers: [18, 36], fwd_bwd_s: [0.16, 0.3], per_layer_s: 0.0077, per_step_s: 0.0213}\n'
        "tail: 1\n")

    @staticmethod
    def depth_line(mode, layers, ms, child=None):
        who = f"  [process {child}] " if child else " "
        return f"[measure_layers 16:42:10]{who}host floor {mode} {layers} layers: fwd+bwd {ms:.2f} ms at 32 tokens"

    def test_one_process_refits_its_two_passes(self):
        # FSDP2 on the line 4 ms + 6 ms a layer, the second pass 1 ms slower at 6 layers; eager lines
        # and a child's lines are not this floor.
        log = "\n".join([self.depth_line("compute-only", 2, 9.0), self.depth_line("fsdp2", 2, 16.0),
                         self.depth_line("fsdp2", 6, 40.0), self.depth_line("fsdp2", 12, 76.0),
                         self.depth_line("fsdp2", 12, 76.0), self.depth_line("fsdp2", 6, 41.0),
                         self.depth_line("fsdp2", 2, 16.0), self.depth_line("fsdp2", 2, 99.0, child=2)])
        layers, times, per_layer, per_step, tokens = one_rank_floor.from_log(log, "run.log")
        self.assertEqual(layers, [2, 6, 12])
        self.assertEqual(tokens, 32)
        for got, want in zip(times, [0.016, 0.0405, 0.076]):
            self.assertAlmostEqual(got, want, places=12)
        want_slope, want_icpt = host_floor_fit.least_squares(
            [(2, 0.016), (6, 0.040), (12, 0.076), (12, 0.076), (6, 0.041), (2, 0.016)])
        self.assertAlmostEqual(per_layer, want_slope, places=12)
        self.assertAlmostEqual(per_step, want_icpt, places=12)
        self.assertGreater(per_layer, 0.0059)
        self.assertLess(per_layer, 0.0061)

    def test_several_processes_take_the_logged_entries_median(self):
        def entries(scale):
            return [{"model": "qwen2.5-3b", "mode": "eager", "micro_batch": 1, "seq_len": 32, "layers": [2, 6],
                     "fwd_bwd_s": [0.005 * scale, 0.013 * scale], "per_layer_s": 1, "per_step_s": 0},
                    {"model": "qwen2.5-3b", "mode": "fsdp2", "micro_batch": 1, "seq_len": 32, "layers": [2, 6],
                     "fwd_bwd_s": [0.016 * scale, 0.040 * scale], "per_layer_s": 1, "per_step_s": 0}]
        import json
        log = "\n".join([self.depth_line("fsdp2", 2, 99.0), self.depth_line("fsdp2", 6, 999.0)] +
                        [f"[measure_layers 16:44:08] host floor process {i} of 3: {json.dumps(entries(k))}"
                         for i, k in ((1, 1.0), (2, 1.3), (3, 0.9))])
        layers, times, per_layer, per_step, tokens = one_rank_floor.from_log(log, "run.log")
        self.assertEqual(layers, [2, 6])  # the processes' entries, not the main process's depth lines
        self.assertEqual(times, [0.016, 0.040])
        self.assertAlmostEqual(per_layer, 0.006, places=12)
        self.assertAlmostEqual(per_step, 0.004, places=12)

    def test_a_log_without_the_floor_is_refused(self):
        with self.assertRaisesRegex(one_rank_floor.FloorError, "run.log: no one-rank FSDP2 floor"):
            one_rank_floor.from_log(self.depth_line("compute-only", 2, 9.0), "run.log")
        with self.assertRaisesRegex(one_rank_floor.FloorError, "run.log: .*no positive slope"):
            one_rank_floor.from_log("\n".join([self.depth_line("fsdp2", 2, 20.0), self.depth_line("fsdp2", 6, 19.0)]),
                                    "run.log")

    def test_the_row_is_replaced_and_nothing_else(self):
        text, row = one_rank_floor.replace_fsdp2_row(self.CALIBRATION, "cal.yaml", [2, 6], [0.016, 0.04], 0.006,
                                                     0.004, seq_len=32)
        want = ('    - {model: "qwen2.5-3b", mode: fsdp2, micro_batch: 1, seq_len: 32, layers: [2, 6], '
                'fwd_bwd_s: [0.016, 0.04], per_layer_s: 0.006, per_step_s: 0.004}')
        self.assertEqual(row, want)
        before, after = self.CALIBRATION.splitlines(), text.splitlines()
        self.assertEqual(len(before), len(after))
        self.assertEqual([b for b, a in zip(before, after) if b != a], [before[4]])
        self.assertEqual(after[4], want)  # no world key: a one-rank floor
        # With world it is kept.
        _, row = one_rank_floor.replace_fsdp2_row(self.CALIBRATION, "cal.yaml", [18, 36], [0.16, 0.3], 0.0078,
                                                  0.0196, world=2)
        self.assertIn("seq_len: 32, world: 2, layers: [18, 36]", row)

    def test_a_calibration_it_cannot_place_the_row_in_is_refused(self):
        r = one_rank_floor.replace_fsdp2_row
        no_row = self.CALIBRATION.replace("mode: fsdp2", "mode: eager")
        with self.assertRaisesRegex(one_rank_floor.FloorError, "cal.yaml: .*expected one fsdp2 row, found 0"):
            r(no_row, "cal.yaml", [2, 6], [0.016, 0.04], 0.006, 0.004)
        two = self.CALIBRATION.replace("tail: 1\n", self.CALIBRATION.splitlines()[4] + "\n")
        with self.assertRaisesRegex(one_rank_floor.FloorError, "found 2"):
            r(two, "cal.yaml", [2, 6], [0.016, 0.04], 0.006, 0.004)
        with self.assertRaisesRegex(one_rank_floor.FloorError, "cal.yaml: host_floor fsdp2 seq_len: 32, but .* 64 tokens"):
            r(self.CALIBRATION, "cal.yaml", [2, 6], [0.016, 0.04], 0.006, 0.004, seq_len=64)

    def test_the_command_rewrites_the_file_and_exits_1_with_the_file_named(self):
        import contextlib
        import io
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            log, cal = os.path.join(tmp, "run.log"), os.path.join(tmp, "cal.yaml")
            with open(log, "w") as f:
                f.write("\n".join([self.depth_line("fsdp2", 2, 16.0), self.depth_line("fsdp2", 6, 40.0)]) + "\n")
            with open(cal, "w") as f:
                f.write(self.CALIBRATION)
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(one_rank_floor.main([log, cal]), 0)
            with open(cal) as f:
                self.assertIn("layers: [2, 6], fwd_bwd_s: [0.016, 0.04], per_layer_s: 0.006", f.read())
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(one_rank_floor.main([os.path.join(tmp, "absent.log"), cal]), 1)
            self.assertIn("absent.log: cannot read", err.getvalue())
            with open(log, "w") as f:
                f.write("nothing here\n")
            with contextlib.redirect_stderr(err):
                self.assertEqual(one_rank_floor.main([log, cal]), 1)
            self.assertIn("run.log: no one-rank FSDP2 floor", err.getvalue())


if __name__ == "__main__":
    unittest.main()
