#!/usr/bin/python3
"""harness/tools/dump_optimizer.py writes golden directories that dmuon-verify accepts.

    python3 tests/test_dump_optimizer.py BUILD/harness/dmuon-verify     # CTest: dump_optimizer

With PyTorch (>= 2.9, CPU is enough): dumps torch.optim.Muon (defaults, and no Nesterov with
match_rms_adamw) and torch.optim.AdamW on the CPU, runs `dmuon-verify --suite none --golden DIR`
on each and expects exit 0; a dump whose optimizer section misdescribes the optimizer must fail
the gate (exit 1); where torch.distributed.run is there, AdamW on 2 CPU ranks (gloo, DTensor
shards) too. Without PyTorch only the argument checks run, then it prints SKIP and exits 77
(CTest: skipped). Writes only in its own temporary directory.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DUMP = os.path.join(ROOT, "harness", "tools", "dump_optimizer.py")
VERIFY = None  # argv[1]


def have_torch():
    """None when usable, else why not."""
    try:
        import torch
    except ImportError as e:
        return f"PyTorch is not installed ({e})"
    if not hasattr(torch.optim, "Muon"):
        return f"torch {torch.__version__} has no torch.optim.Muon (needs >= 2.9)"
    return None


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dmuon-test-dump-optimizer-")
        # No __pycache__ beside dump_torch_cases.py: tests write only in their own directory.
        self.env = dict(os.environ, TMPDIR=self.tmp, PYTHONDONTWRITEBYTECODE="1")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def dump(self, *args, launcher=()):
        return subprocess.run([*launcher, DUMP, *args] if launcher else [sys.executable, DUMP, *args], cwd=self.tmp,
                              env=self.env, capture_output=True, text=True, timeout=600)

    def verify(self, golden):
        return subprocess.run([VERIFY, "--suite", "none", "--golden", golden], cwd=self.tmp, capture_output=True,
                              text=True, timeout=600)


class ArgumentTest(Base):
    """Needs no torch: arguments are checked before it is imported."""

    def test_malformed_kwargs(self):
        r = self.dump("--optimizer", "torch.optim:Muon", "--kwargs", '{"lr": 0.02', "--out", "g")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--kwargs: malformed JSON", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "g")))

    def test_bad_optimizer_and_shapes(self):
        r = self.dump("--optimizer", "Muon", "--out", "g")
        self.assertEqual(r.returncode, 2)
        self.assertIn("expected module:Class", r.stderr)
        r = self.dump("--optimizer", "torch.optim:Muon", "--shapes", "4x0", "--out", "g")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--shapes", r.stderr)


@unittest.skipIf(have_torch() is not None, "needs PyTorch >= 2.9")
class TorchTest(Base):
    def dump_and_verify(self, name, *args):
        out = os.path.join(self.tmp, name)
        r = self.dump(*args, "--out", out, "--device", "cpu")
        self.assertEqual(r.returncode, 0, r.stderr)
        v = self.verify(out)
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)
        with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
            return json.load(f), v

    def test_muon_default(self):
        m, v = self.dump_and_verify("muon", "--optimizer", "torch.optim:Muon",
                                    "--kwargs", '{"lr": 0.02, "weight_decay": 0.1}')
        self.assertEqual(m["format"], "dmuon-golden-1")
        self.assertEqual([c["kind"] for c in m["cases"]], ["muon"] * 3)
        self.assertEqual(m["cases"][0]["optimizer"],
                         {"preset": "torch", "lr": 0.02, "weight_decay": 0.1, "momentum": 0.95, "nesterov": True,
                          "adjust_lr": "original", "ns": {"coefficients": "keller", "steps": 5, "eps": 1e-7}})
        self.assertIn("12 passed, 0 failed", v.stdout)

    def test_muon_variant(self):
        m, _ = self.dump_and_verify("muon2", "--optimizer", "torch.optim.Muon", "--kwargs",
                                    '{"lr": 0.01, "nesterov": false, "adjust_lr_fn": "match_rms_adamw"}',
                                    "--shapes", "40x24,16x64")
        self.assertEqual(len(m["cases"]), 2)
        self.assertEqual(m["cases"][0]["optimizer"]["adjust_lr"], "match_rms_adamw")
        self.assertFalse(m["cases"][0]["optimizer"]["nesterov"])

    def test_adamw(self):
        m, _ = self.dump_and_verify("adamw", "--optimizer", "torch.optim:AdamW", "--kwargs",
                                    '{"lr": 0.01, "betas": [0.9, 0.95], "weight_decay": 0.1}')
        self.assertEqual([c["kind"] for c in m["cases"]], ["adamw", "adamw"])
        self.assertEqual(m["cases"][0]["optimizer"],
                         {"adamw": {"lr": 0.01, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}})

    def test_wrong_section_fails_the_gate(self):
        out = os.path.join(self.tmp, "wrong")
        r = self.dump("--optimizer", "torch.optim:Muon", "--kwargs", '{"lr": 0.02}', "--out", out, "--device", "cpu",
                      "--section", '{"preset": "torch", "lr": 0.02, "adjust_lr": "match_rms_adamw"}')
        self.assertEqual(r.returncode, 0, r.stderr)
        v = self.verify(out)
        self.assertEqual(v.returncode, 1, v.stdout + v.stderr)

    def test_other_class_needs_kind_and_section(self):
        r = self.dump("--optimizer", "torch.optim:SGD", "--out", "g", "--device", "cpu")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--kind muon|adamw and --section", r.stderr)

    def test_distributed_adamw_on_two_cpu_ranks(self):
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_gloo_available():
            self.skipTest("torch.distributed with gloo is not available")
        out = os.path.join(self.tmp, "dist")
        r = self.dump("--optimizer", "torch.optim:AdamW", "--kwargs", '{"lr": 0.01}', "--out", out, "--device", "cpu",
                      launcher=(sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"))
        self.assertEqual(r.returncode, 0, r.stderr)
        v = self.verify(out)
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)


def main():
    global VERIFY
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        print("usage: test_dump_optimizer.py PATH/TO/dmuon-verify", file=sys.stderr)
        return 2
    VERIFY = os.path.abspath(sys.argv.pop(1))
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        return 1
    why = have_torch()
    if why:
        print(f"SKIP: the dump itself did not run: {why}; the argument checks passed")
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
