#!/usr/bin/python3
"""harness/tools/torch_trace_summary.py: busy time is the union of kernel intervals per stream
and over all streams, idle is the window minus that union, and kernels are binned by kind.

    /usr/bin/python3 tests/test_torch_trace_summary.py     # CTest: torch_trace_summary

A hand-made trace with overlapping kernels on two streams, a CPU event that must be ignored, and
a gzip file written in the test's own temporary directory.
"""

import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "harness", "tools", "torch_trace_summary.py")
sys.path.insert(0, os.path.dirname(TOOL))
import torch_trace_summary as tts  # noqa: E402


def kernel(name, ts, dur, stream):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"stream": stream}}


# Window 0..1000 us. Stream 7: GEMM 0-300, copy 200-400 (overlap 100) -> 400 busy.
# Stream 9: NCCL 350-700 -> 350 busy. Union over both: 0-700 -> 700; the last kernel, an
# elementwise one on stream 7 at 900-1000, adds 100: busy 800, idle 200.
TRACE = {"traceEvents": [
    kernel("sm90_xmma_gemm_bf16bf16_bf16f32", 0, 300, 7),
    kernel("void at::native::elementwise_kernel<copy_>", 200, 200, 7),
    kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 350, 350, 9),
    kernel("void at::native::vectorized_elementwise_kernel<mul>", 900, 100, 7),
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": -500, "dur": 5000},
]}


class Summary(unittest.TestCase):
    def test_union_busy_idle_and_kinds(self):
        s = tts.summarize(TRACE)
        self.assertAlmostEqual(s["window_seconds"], 1000e-6)
        self.assertAlmostEqual(s["gpu_busy_seconds"], 800e-6)
        self.assertAlmostEqual(s["gpu_idle_seconds"], 200e-6)
        self.assertAlmostEqual(s["busy_seconds_by_stream"]["7"], 500e-6)
        self.assertAlmostEqual(s["busy_seconds_by_stream"]["9"], 350e-6)
        k = s["kernel_seconds_by_kind"]
        self.assertAlmostEqual(k["gemm"], 300e-6)
        self.assertAlmostEqual(k["copy_cast"], 200e-6)
        self.assertAlmostEqual(k["nccl"], 350e-6)
        self.assertAlmostEqual(k["other"], 100e-6)
        self.assertEqual(s["kernels"], 4)

    def test_no_kernels_is_an_error(self):
        with self.assertRaises(ValueError):
            tts.summarize({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "x", "ts": 0, "dur": 1}]})

    def test_cli_reads_gzip_and_names_a_bad_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.json.gz")
            with gzip.open(path, "wt") as f:
                json.dump(TRACE, f)
            out = os.path.join(tmp, "s.json")
            p = subprocess.run([sys.executable, TOOL, path, "--json", out], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                self.assertAlmostEqual(json.load(f)["gpu_busy_seconds"], 800e-6)
            bad = os.path.join(tmp, "missing.json")
            p = subprocess.run([sys.executable, TOOL, bad], capture_output=True, text=True)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("missing.json", p.stderr)


if __name__ == "__main__":
    unittest.main()
