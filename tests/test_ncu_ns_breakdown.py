#!/usr/bin/python3
"""harness/tools/ncu_ns_breakdown.py: an ncu capture of `dmuon-bench kernels` split into its
Newton-Schulz calls and each call's kernels grouped by kind. Checked on a committed H100 capture
(stop 45: gram_sm90 on 14336 x 4096, 23 launches a call) and on small captures written here that
exercise the kernel-name forms, the units and the call boundaries.

    /usr/bin/python3 tests/test_ncu_ns_breakdown.py   # CTest: ncu_ns_breakdown

Files are written in the test's own temporary directory.
"""

import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "harness", "tools"))
import ncu_ns_breakdown as nb  # noqa: E402
from tool_test_support import TempDirCase  # noqa: E402 (tests/, beside this file)

CAPTURE = os.path.join(ROOT, "reports", "measured", "whole-model-2026-11-27-2243", "ncu-chosen",
                       "ncu-14336x4096-dmuon.csv")
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n')


def row(i, name, unit, value, metric="gpu__time_duration.sum"):
    return (f'"{i}","1","b","h","{name}","1","7","(384,1,1)","(132,1,1)","0","9.0","Command line profiler metrics",'
            f'"{metric}","{unit}","{value}"\n')


class Breakdown(TempDirCase):
    def capture(self, rows):
        path = os.path.join(self.tmp.name, "capture.csv")
        with open(path, "w") as f:
            f.write("==PROF== Connected to process 1\n" + HEADER + "".join(rows))
        return path

    def assertKind(self, got, launches, seconds):
        self.assertEqual(got[0], launches)
        self.assertAlmostEqual(got[1], seconds, delta=1e-12)

    def test_committed_gram_capture(self):
        found = nb.calls(nb.read_capture(CAPTURE))
        self.assertEqual(len(found), 3)  # --repeats 3 of the chosen gram_sm90
        for call in found:
            self.assertEqual(len(call), 23)
            kinds = nb.by_kind(call)
            self.assertEqual(kinds["triangle, with C (fp16)"][0], 14)  # the m x m products
            self.assertEqual(kinds["triangle, X X^T (fp16)"][0], 2)    # R, once a restart
            self.assertEqual(kinds["cuBLAS GEMM"][0], 2)               # Q X, once a restart
            self.assertEqual(kinds["Q = Z + a I"][0], 2)
            total = sum(t for _, t, _ in kinds.values())
            self.assertAlmostEqual(total, 4.0e-3, delta=0.05e-3)  # 4.000-4.010 ms in the capture
            self.assertAlmostEqual(kinds["cuBLAS GEMM"][1] / 2, 0.616e-3, delta=0.01e-3)
            # The capture also has sm__cycles_elapsed.avg.per_second: 1.5-1.7 GHz in the GEMMs, ~1.9
            # GHz in the short normalisation kernels.
            self.assertTrue(1.4e9 < kinds["cuBLAS GEMM"][2] < 1.8e9)
            self.assertTrue(1.8e9 < kinds["normalise: sum of squares"][2] < 2.1e9)

    def test_names_units_and_boundaries(self):
        path = self.capture([
            row(0, "nvjet_sm90_tst_64x48", "usecond", "9"),                      # a ceiling: in no call
            row(1, "dmuon::<unnamed>::fill_normal_kernel(void *)", "usecond", "10"),
            row(2, "void dmuon::<unnamed>::sum_squares_vec_kernel<float>(const T1 *)", "nsecond", "50,000"),
            row(3, "void sym::sym_gemm_kernel<__half, (bool)1>(CUtensorMap_st)", "usecond", "1,140"),
            row(4, "void sym::sym_gemm_kernel<__nv_bfloat16, false>(CUtensorMap_st)", "msecond", "0.3"),
            row(5, "nvjet_sm90_hsh_320x128", "ms", "0.6"),
            row(6, "dmuon::<unnamed>::fill_normal_kernel(void *)", "usecond", "10"),  # ends the call
            row(7, "nvjet_sm90_hsh_320x128", "usecond", "600"),
            row(8, "void dmuon::<unnamed>::sum_squares_vec_kernel<float>(const T1 *)", "usecond", "40"),
            row(9, "void sym::sym_gemm_kernel<__half, 64, 0>(CUtensorMap_st)", "usecond", "100"),
            row(9, "void sym::sym_gemm_kernel<__half, 64, 0>(CUtensorMap_st)", "usecond", "5", metric="other"),
        ])
        found = nb.calls(nb.read_capture(path))
        self.assertEqual([len(c) for c in found], [4, 2])
        first = nb.by_kind(found[0])
        self.assertKind(first["triangle, with C (fp16)"], 1, 1.14e-3)
        self.assertKind(first["triangle, X X^T (bf16)"], 1, 0.3e-3)
        self.assertAlmostEqual(first["cuBLAS GEMM"][1], 0.6e-3)
        self.assertAlmostEqual(first["normalise: sum of squares"][1], 50e-6)
        self.assertKind(nb.by_kind(found[1])["triangle, X X^T (fp16)"], 1, 100e-6)
        self.assertIsNone(first["cuBLAS GEMM"][2])  # no clock rows in this capture
        # A triangle instance whose template arguments the pattern does not read is not a cuBLAS GEMM.
        self.assertTrue(nb.kind_of("void sym::sym_gemm_kernel<sym::Cfg<(bool)0>, float>(CUtensorMap_st)")
                        .startswith("triangle, instance not parsed"))

    def test_clock_weighted_by_time(self):
        path = self.capture([
            row(0, "sum_squares_vec_kernel", "us", "10"), row(0, "sum_squares_vec_kernel", "hz", "2,000,000,000",
                                                             metric=nb.CLOCK),
            row(1, "nvjet_a", "us", "30"), row(1, "nvjet_a", "hz", "1,000,000,000", metric=nb.CLOCK),
            row(2, "nvjet_b", "us", "10"), row(2, "nvjet_b", "hz", "2,000,000,000", metric=nb.CLOCK),
        ])
        kinds = nb.by_kind(nb.calls(nb.read_capture(path))[0])
        self.assertAlmostEqual(kinds["cuBLAS GEMM"][2], 1.25e9, delta=1.0)  # (30 x 1 + 10 x 2) / 40 GHz
        self.assertAlmostEqual(kinds["normalise: sum of squares"][2], 2e9, delta=1.0)

    def test_refusals(self):
        with self.assertRaises(SystemExit) as e:
            nb.read_capture(self.capture([row(0, "sum_squares_kernel", "furlong", "1")]))
        self.assertIn("unknown unit", str(e.exception))
        with self.assertRaises(SystemExit) as e:
            nb.read_capture(self.capture([row(0, "sum_squares_kernel", "us", "1", metric="other")]))
        self.assertIn("no gpu__time_duration.sum rows", str(e.exception))
        with self.assertRaises(SystemExit) as e:
            nb.read_capture(self.capture([row(0, "sum_squares_kernel", "us", "1"),
                                          row(0, "sum_squares_kernel", "MHz", "1", metric=nb.CLOCK)]))
        self.assertIn("unknown unit 'MHz'", str(e.exception))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
