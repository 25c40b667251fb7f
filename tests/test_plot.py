#!/usr/bin/python3
"""harness/tools/plot.py renders every plot from the committed reports (and tests/data/plot/)
into valid PNG and SVG files holding the series of its input.

    /usr/bin/python3 tests/test_plot.py        # CTest: plot_tools

Each plot runs as a subprocess with --series, whose JSON (the plotted data) is checked against
the input report. Exits 77 (CTest: skipped) where matplotlib or numpy is not installed. Writes
only in its own temporary directory (matplotlib's cache included: MPLCONFIGDIR).
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
PLOT = os.path.join(ROOT, "harness", "tools", "plot.py")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VALIDATION = ["sim-validation-1xh100.json", "sim-validation-1xh100-calibrated.json", "sim-validation-2xh200.json",
              "sim-validation-2xh200-llama3-8b.json"]


def report(name):
    return os.path.join(ROOT, "reports", name)


def fixture(name):
    return os.path.join(ROOT, "tests", "data", "plot", name)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class PlotTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dmuon-test-plot-")
        self.env = dict(os.environ, MPLCONFIGDIR=os.path.join(self.tmp, "mpl"), MPLBACKEND="Agg",
                        PYTHONDONTWRITEBYTECODE="1")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_plot(self, *args):
        return subprocess.run([sys.executable, PLOT, *args], cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=300)

    def render(self, name, *args):
        """Runs one plot; checks both images; returns its series."""
        prefix = os.path.join(self.tmp, name)
        sidecar = prefix + ".series.json"
        r = self.run_plot(*args, "--out", prefix, "--series", sidecar)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(prefix + ".png", "rb") as f:
            png = f.read()
        self.assertTrue(png.startswith(PNG_SIGNATURE), f"{name}.png is not a PNG")
        self.assertGreater(len(png), 1000)
        with open(prefix + ".svg", encoding="utf-8") as f:
            svg = f.read()
        self.assertIn("<svg", svg)
        self.assertTrue(svg.rstrip().endswith("</svg>"), f"{name}.svg is truncated")
        out = load(sidecar)
        self.assertEqual(sorted(out["outputs"]), [prefix + ".png", prefix + ".svg"])
        return out["series"]

    def test_scaling(self):
        src = load(report("sim-16node-scaling.json"))
        s = self.render("scaling", "scaling", report("sim-16node-scaling.json"), "--published-from",
                        report("sim-validation.json"), "--published-nodes", "16")
        self.assertEqual(list(s["strategies"]), ["adamw", "zero1-a2a", "dedicated"])
        for name, line in s["strategies"].items():
            expected = [(run["nodes"], st["step_seconds"] * 1e3) for run in src["runs"]
                        for st in run["strategies"] if st["strategy"] == name]
            self.assertEqual(line["nodes"], [1, 2, 4, 8, 16])
            self.assertEqual(len(line["step_ms"]), 5)
            for (n, ms), got_n, got_ms in zip(sorted(expected), line["nodes"], line["step_ms"]):
                self.assertEqual(n, got_n)
                self.assertAlmostEqual(ms, got_ms, places=9)
        self.assertEqual(s["strategies"]["adamw"]["delta_vs_adamw_pct"], [0.0] * 5)
        published = {p["strategy"]: p for p in s["published"]}
        self.assertEqual(sorted(published), ["adamw", "dedicated"])
        self.assertAlmostEqual(published["adamw"]["ms"], 1259)
        self.assertAlmostEqual(published["dedicated"]["ms"], 1285)
        self.assertEqual(published["dedicated"]["nodes"], 16)
        self.assertAlmostEqual(published["dedicated"]["delta_vs_published_adamw_pct"], 100 * (1285 / 1259 - 1))

    def test_scaling_published_option(self):
        s = self.render("scaling2", "scaling", report("sim-16node-scaling.json"),
                        "--published", "nodes=16,strategy=dedicated,ms=1285")
        self.assertEqual(s["published"], [{"nodes": 16, "strategy": "dedicated", "ms": 1285.0,
                                           "label": "published dedicated"}])
        r = self.run_plot("scaling", report("sim-16node-scaling.json"), "--published", "nodes=16,ms=1285",
                          "--out", os.path.join(self.tmp, "bad"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing strategy=", r.stderr)

    def test_scaling_refuses_a_model_sweep(self):
        r = self.run_plot("scaling", report("sim-8xa800-llm.json"), "--out", os.path.join(self.tmp, "x"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("runs[1].nodes", r.stderr)

    def test_breakdown(self):
        src = load(report("sim-16node.json"))["runs"][0]
        s = self.render("breakdown", "breakdown", report("sim-16node.json"))
        self.assertEqual(list(s["strategies"]), [st["strategy"] for st in src["strategies"]])
        self.assertEqual(list(s["strategies"]), ["adamw", "ddp-redundant", "fsdp-gather", "zero1-a2a", "dedicated", "owner-striped"])
        for st in src["strategies"]:
            got = s["strategies"][st["strategy"]]
            self.assertAlmostEqual(got["fwd_bwd_compute_ms"], st["fwd_bwd_compute_seconds"] * 1e3, places=9)
            self.assertAlmostEqual(got["exposed_comm_ms"], st["exposed_comm_seconds"] * 1e3, places=9)
            self.assertAlmostEqual(got["fwd_bwd_compute_ms"] + got["exposed_comm_ms"] + got["optimizer_compute_ms"],
                                   st["step_seconds"] * 1e3, places=6)
            self.assertGreaterEqual(got["optimizer_compute_ms"], 0)
        # A sweep picks its run by sweep_value.
        s = self.render("breakdown-sweep", "breakdown", report("sim-16node-scaling.json"), "--sweep-value", "nodes=4")
        self.assertEqual(s["run"], 2)
        self.assertEqual(list(s["strategies"]), ["adamw", "zero1-a2a", "dedicated"])

    def test_owners(self):
        src = next(x for x in load(report("step-2xh200.json"))["strategies"] if x["strategy"] == "dedicated")
        s = self.render("owners", "owners", report("step-2xh200.json"))
        self.assertTrue(s["per_rank"])
        self.assertEqual(s["strategy"], "dedicated")
        self.assertEqual(s["ranks"], [0, 1])
        for got, r in zip(s["ns_ms"], src["ranks"]):
            self.assertAlmostEqual(got, r["ns_busy_seconds"] * 1e3, places=9)
        s = self.render("owners-zero1", "owners", report("step-2xh200-llama3-8b.json"), "--strategy", "zero1-a2a")
        self.assertEqual(s["strategy"], "zero1-a2a")
        self.assertEqual(len(s["ns_ms"]), 2)

    def test_owners_from_sim_json_says_what_it_plots(self):
        s = self.render("owners-sim", "owners", report("sim-16node.json"))
        self.assertFalse(s["per_rank"])
        self.assertIn("no per-rank", s["note"])
        self.assertEqual(len(s["owner_imbalance"]), len(load(report("sim-16node.json"))["runs"][0]["strategies"]))

    def test_parity(self):
        files = [report(f) for f in VALIDATION]
        s = self.render("parity", "parity", *files)
        rows = [r for f in files for r in load(f)["rows"]]
        self.assertEqual(len(s["points"]), len(rows))
        self.assertEqual(sorted({p["file"] for p in s["points"]}),
                         ["1xh100", "1xh100-calibrated", "2xh200", "2xh200-llama3-8b"])
        for p, r in zip(s["points"], rows):
            self.assertEqual((p["strategy"], p["quantity"]), (r["strategy"], r["quantity"]))
            self.assertAlmostEqual(p["predicted_ms"], r["predicted_seconds"] * 1e3, places=9)
            self.assertAlmostEqual(p["measured_ms"], r["measured_seconds"] * 1e3, places=9)

    def test_parity_plots_only_seconds(self):
        s = self.render("parity-bytes", "parity", fixture("validation-fsdp2-bytes.json"),
                        report("sim-validation-2xh200.json"))
        self.assertEqual(s["skipped_units"], {"bytes": 1})
        fixture_points = [p for p in s["points"] if p["machine"] == "fixture-2xh200"]
        self.assertEqual([p["strategy"] for p in fixture_points], ["adamw", "dedicated"])
        self.assertAlmostEqual(fixture_points[0]["predicted_ms"], 300.0)
        self.assertAlmostEqual(fixture_points[1]["measured_ms"], 11.0)

    def test_kernels(self):
        src = load(report("kernels-h100-sxm.json"))
        s = self.render("kernels", "kernels", report("kernels-h100-sxm.json"))
        shapes = {f"{r['rows']}x{r['cols']}" for r in src["rows"]}
        self.assertEqual({x["shape"] for x in s["shapes"]}, shapes)
        self.assertEqual(sorted(s["models"]), ["list", "llama3-8b", "qwen2.5-3b"])
        row = next(r for r in src["rows"] if (r["rows"], r["cols"], r["preset"], r["batch"]) == (256, 2048, "dmuon", 1))
        got = next(x for x in s["shapes"] if x["shape"] == "256x2048")
        self.assertAlmostEqual(got["speedup_batch1"]["dmuon"], row["speedup_vs_torch"], places=9)
        batched = max(r["batch"] for r in src["rows"] if (r["rows"], r["cols"], r["preset"]) == (256, 2048, "dmuon"))
        self.assertGreater(batched, 1)  # the report times the shape at the executor's batch too
        self.assertEqual(got["batched_batch"]["dmuon"], batched)

    def test_sim_speed(self):
        # harness/tools/plot_sim_speed.py draws sim_speed_bench.sh's CSV (it once named a list
        # plot.py no longer has, unnoticed until a report needed it).
        csv_path = os.path.join(self.tmp, "timings.csv")
        with open(csv_path, "w", encoding="utf-8") as f:
            f.write("gpus,strategy,tag,run,rc,wall_s,rss_kB,plan_s,sim_s,load1,cpu_s\n")
            for tag, scale in (("before", 2.0), ("after", 1.0)):
                for gpus in (128, 512):
                    f.write(f"{gpus},adamw,{tag},1,0,{scale * gpus / 100},{int(scale * gpus * 1000)},0.1,0.2,1.0,{scale}\n")
        prefix = os.path.join(self.tmp, "speed")
        r = subprocess.run([sys.executable, os.path.join(ROOT, "harness", "tools", "plot_sim_speed.py"), csv_path,
                            "--out", prefix], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(prefix + ".png", "rb") as f:
            self.assertTrue(f.read().startswith(PNG_SIGNATURE))

    def test_bad_input_names_file_and_field(self):
        bad = os.path.join(self.tmp, "bad.json")
        with open(bad, "w", encoding="utf-8") as f:
            f.write("{\"runs\": [")
        r = self.run_plot("breakdown", bad, "--out", os.path.join(self.tmp, "x"))
        self.assertEqual(r.returncode, 2)
        self.assertIn(bad, r.stderr)
        self.assertIn("malformed JSON", r.stderr)
        doc = load(report("sim-16node.json"))
        del doc["runs"][0]["strategies"][1]["step_seconds"]
        with open(bad, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        r = self.run_plot("breakdown", bad, "--out", os.path.join(self.tmp, "x"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing field 'runs[0].strategies[1].step_seconds'", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        r = self.run_plot("parity", report("sim-16node.json"), "--out", os.path.join(self.tmp, "x"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing field 'rows'", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.png")))


def main():
    try:
        import matplotlib  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        print(f"SKIP: plot_tools needs python3-matplotlib and python3-numpy ({e}); "
              "apt-get install python3-matplotlib python3-numpy")
        return SKIP
    result = unittest.main(exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
