#!/usr/bin/python3
"""harness/tools/world_host_floor.py: the FSDP2 floor is the slope between two depths of the same
model, shape and world; it replaces layers.json's fsdp2 entry and keeps the eager one; runs that
do not match, or give no positive slope, are refused with the file and field named and layers.json
left as it was.

    /usr/bin/python3 tests/test_world_host_floor.py     # CTest: world_host_floor

Files are written in the test's own temporary directory.
"""

import json
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "harness", "tools"))
import world_host_floor as whf  # noqa: E402
from tool_test_support import TempDirCase  # noqa: E402 (tests/, beside this file)


def run(layers, seconds, **over):
    r = {"tool": "fsdp2_step.py", "model": "qwen2.5-3b", "mode": "fsdp2", "world": 2, "micro_batch": 1,
         "seq_len": 32, "num_layers": layers, "fwd_bwd_seconds_median": seconds}
    r.update(over)
    return r


class WorldHostFloor(TempDirCase):
    def test_slope_intercept_and_merge(self):
        half = self.write("half.json", run(18, 0.150))
        full = self.write("full.json", run(36, 0.285))
        eager = {"model": "qwen2.5-3b", "mode": "eager", "per_layer_s": 0.003}
        layers = self.write("layers.json", {"source": "x", "host_floor": [eager, {"mode": "fsdp2", "per_layer_s": 1}]})
        self.assertEqual(whf.main([full, half, "--merge-into", layers]), 0)  # order of the runs does not matter
        with open(layers) as f:
            merged = json.load(f)
        self.assertEqual(merged["source"], "x")
        self.assertEqual(merged["host_floor"][0], eager)
        (entry,) = [e for e in merged["host_floor"] if e["mode"] == "fsdp2"]
        self.assertEqual(entry["layers"], [18, 36])
        self.assertEqual(entry["fwd_bwd_s"], [0.150, 0.285])
        self.assertAlmostEqual(entry["per_layer_s"], 0.135 / 18, places=15)
        self.assertAlmostEqual(entry["per_step_s"], 0.150 - 18 * 0.135 / 18, places=15)
        self.assertEqual((entry["world"], entry["micro_batch"], entry["seq_len"], entry["model"]), (2, 1, 32, "qwen2.5-3b"))

    def refused(self, half, full, message):
        layers = self.write("layers.json", {"host_floor": [{"mode": "fsdp2", "per_layer_s": 1}]})
        with open(layers) as f:
            before = f.read()
        with self.assertRaises(whf.FloorError) as e:
            entry = whf.floor_entry(self.write("h.json", half), self.write("f.json", full))
            whf.merge(layers, entry)
        self.assertIn(message, str(e.exception))
        with open(layers) as f:
            self.assertEqual(f.read(), before)

    def test_refusals(self):
        self.refused(run(18, 0.15), run(36, 0.28, world=1), "f.json: world: 1, but")
        self.refused(run(18, 0.15), run(36, 0.28, seq_len=2048), "seq_len")
        self.refused(run(18, 0.15), run(18, 0.28), "both runs have 18 layers")
        self.refused(run(18, 0.15), run(36, 0.14), "no positive slope")
        self.refused(run(18, 0.15, mode="compute-only"), run(36, 0.28), "h.json: mode: expected fsdp2")
        self.refused(run(18, 0.15), run(36, 0), "fwd_bwd_seconds_median: must be > 0")
        incomplete = run(36, 0.28)
        del incomplete["num_layers"]
        self.refused(run(18, 0.15), incomplete, "f.json: num_layers: missing")
        self.refused(run(18, 0.15), {"tool": "other"}, "not an fsdp2_step.py report")


if __name__ == "__main__":
    unittest.main()
