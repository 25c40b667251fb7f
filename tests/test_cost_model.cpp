// Newton-Schulz flop counts match the Gram-NS blog; device profiles, calibration tables and the
// cost model price compute ops as documented, and bad calibration files fail with file:line.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "test_temp_dir.hpp"
#include "core/cost/calibration.hpp"
#include "core/error.hpp"
#include "core/cost/ns_flops.hpp"

using namespace dmuon;

namespace {

double m3(long m) { return double(m) * m * m; }

CalibrationTable sample_table() {
  CalibrationTable t;
  t.gpu = "h100-sxm";
  t.source = "dmuon-bench --ns (test fixture), 2026-11-20";
  t.gemm_tflops = 781.25;
  t.hbm_GBps = 2990.5;
  t.ns.push_back({4096, 14336, NsKernel::gram, DType::fp16, 5, {2}, 1, 4.12e-3});
  t.ns.push_back({768, 2048, NsKernel::standard, DType::bf16, 5, {}, 1, 1.0e-4});
  t.ns.push_back({768, 2048, NsKernel::standard, DType::bf16, 5, {}, 8, 3.0e-4});
  t.ns.push_back({768, 2048, NsKernel::standard, DType::bf16, 5, {}, 64, 1.7e-3});
  t.elementwise.momentum_GBps = 2600;
  t.elementwise.adamw_GBps = 2400.25;
  return t;
}

const char* kValidCalibration = R"(gpu: h100-sxm
source: "bench 2026-11-20"
gemm_tflops: 780
hbm_GBps: 2990
ns:
  - {rows: 2048, cols: 768, kernel: standard, dtype: bf16, steps: 5, batch: 1, seconds: 0.0001}
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

CalibrationTable parse_text(const std::string& text) {
  return parse_calibration(YamlValue::load_string(text, "calib.yaml"));
}

}  // namespace

TEST_CASE("standard and symmetric NS flops follow the blog's T = 5 formulas", "[ns_flops]") {
  const long m = 512;
  for (long alpha : {1L, 2L, 4L, 8L}) {
    const long n = alpha * m;
    CHECK(ns_flops(NsKernel::standard, m, n, 5, {}) == Approx((20 * alpha + 10) * m3(m)));
    CHECK(ns_flops(NsKernel::symmetric, n, m, 5, {}) == Approx((15 * alpha + 5) * m3(m)));
    CHECK(ns_useful_flops(n, m, 5) == ns_flops(NsKernel::standard, m, n, 5, {}));
  }
}

TEST_CASE("Gram NS flops: naive, one restart, and each extra restart", "[ns_flops]") {
  const long m = 1024;
  for (long alpha : {1L, 3L, 4L, 14L}) {
    const long n = alpha * m;
    CHECK(ns_flops(NsKernel::gram, m, n, 5, {}) == Approx((17 + 3 * alpha) * m3(m)));
    CHECK(ns_flops(NsKernel::gram, n, m, 5, {2}) == Approx((14 + 6 * alpha) * m3(m)));
    // Each extra restart adds 3 m^2 n - 3 m^3; with T-1 restarts Gram equals symmetric standard.
    const double extra = 3.0 * m * m * n - 3 * m3(m);
    CHECK(ns_flops(NsKernel::gram, m, n, 5, {2, 4}) == Approx(ns_flops(NsKernel::gram, m, n, 5, {2}) + extra));
    CHECK(ns_flops(NsKernel::gram, m, n, 5, {1, 2, 3}) ==
          Approx(ns_flops(NsKernel::gram, m, n, 5, {2}) + 2 * extra));
    CHECK(ns_flops(NsKernel::gram, m, n, 5, {1, 2, 3, 4}) == Approx(ns_flops(NsKernel::symmetric, m, n, 5, {})));
  }
}

TEST_CASE("NS flops reproduce the per-shape table of kernel-anchors.md 1.3", "[ns_flops]") {
  struct Row { long m, n; double general, symmetric, gram; };
  const std::vector<Row> rows = {
      {896, 4864, 8.53e10, 6.22e10, 3.35e10},    {2048, 11008, 1.01e12, 7.36e11, 3.97e11},
      {4096, 14336, 5.50e12, 3.95e12, 2.41e12},  {1024, 4096, 9.66e10, 6.98e10, 4.08e10},
      {2048, 16384, 1.46e12, 1.07e12, 5.33e11},  {768, 2048, 2.87e10, 2.04e10, 1.36e10},
      {1408, 2048, 1.09e11, 7.49e10, 6.34e10},
  };
  for (const auto& r : rows) {
    INFO(r.m << "x" << r.n);
    // The table prints three significant digits.
    CHECK(ns_flops(NsKernel::standard, r.m, r.n, 5, {}) == Approx(r.general).epsilon(0.006));
    CHECK(ns_flops(NsKernel::symmetric, r.m, r.n, 5, {}) == Approx(r.symmetric).epsilon(0.006));
    CHECK(ns_flops(NsKernel::gram, r.m, r.n, 5, {2}) == Approx(r.gram).epsilon(0.006));
  }
  CHECK(ns_flops(NsKernel::standard, 4096, 4096, 5, {}) == Approx(2.06e12).epsilon(0.006));
  CHECK(ns_flops(NsKernel::symmetric, 4096, 4096, 5, {}) == Approx(1.37e12).epsilon(0.006));
}

TEST_CASE("GEMM launches per call, kernel names and bad arguments", "[ns_flops]") {
  CHECK(ns_gemm_count(NsKernel::standard, 5, {}) == 15);
  CHECK(ns_gemm_count(NsKernel::gram, 5, {}) == 19);
  CHECK(ns_gemm_count(NsKernel::gram, 5, {2}) == 18);
  for (auto k : {NsKernel::standard, NsKernel::symmetric, NsKernel::gram}) {
    CHECK(parse_ns_kernel(to_string(k), "k") == k);
  }
  CHECK_THROWS_WITH(parse_ns_kernel("syrk", "ns.kernel"), Catch::Contains("ns.kernel: unknown"));
  CHECK_THROWS_AS(ns_flops(NsKernel::gram, 10, 20, 5, {0}), Error);
  CHECK_THROWS_AS(ns_flops(NsKernel::gram, 10, 20, 5, {3, 2}), Error);
  CHECK_THROWS_AS(ns_flops(NsKernel::standard, 0, 20, 5, {}), Error);
  NsConfig ns;
  CHECK(ns_kernel_of(ns) == NsKernel::standard);
  ns.variant = NsVariant::gram;
  CHECK(ns_kernel_of(ns) == NsKernel::gram);
}

TEST_CASE("built-in device profiles carry the measured rates", "[device]") {
  const auto h100 = device_profile("h100-sxm");
  CHECK(h100.gemm_tflops == 798);
  CHECK(h100.hbm_GBps == 3000);
  const auto h200 = device_profile("h200");
  CHECK(h200.gemm_tflops == 788);
  CHECK(h200.hbm_GBps == 4300);
  const auto a800 = device_profile("a800-sxm4-80gb");
  CHECK(a800.gemm_tflops == 312);
  CHECK(a800.hbm_GBps == 2039);
  CHECK(a800.memory_GiB == 80);
  CHECK_THROWS_WITH(device_profile("b200"), Catch::Contains("unknown GPU profile 'b200'"));
  // Efficiency is linear in log2(m) between points and clamped outside them.
  CHECK(h100.gemm_efficiency(16) == Approx(0.05));
  CHECK(h100.gemm_efficiency(64) == Approx(0.05));
  CHECK(h100.gemm_efficiency(512) == Approx(0.5));
  CHECK(h100.gemm_efficiency(2048) == Approx(0.8));
  CHECK(h100.gemm_efficiency(1 << 20) == Approx(1.0));
}

TEST_CASE("a gpu: entry parses strictly", "[device]") {
  auto parse = [](const std::string& text) {
    return parse_device_profile(YamlMap(YamlValue::load_string(text, "s.yaml")).get("gpu"));
  };
  CHECK(parse("gpu: h200").name == "h200");
  const auto custom = parse(
      "gpu:\n  name: lab-gpu\n  gemm_tflops: 400\n  hbm_GBps: 2000\n  memory_GiB: 40\n"
      "  launch_overhead_us: 3\n  small_shape_efficiency: [[128, 0.2], [2048, 0.9]]\n");
  CHECK(custom.gemm_tflops == 400);
  CHECK(custom.launch_overhead_us == 3);
  CHECK(custom.gemm_efficiency(512) == Approx(0.2 + 0.7 * 2.0 / 4.0));
  CHECK(parse("gpu: {name: h100-sxm, gemm_tflops: 700}").hbm_GBps == 3000);
  CHECK_THROWS_WITH(parse("gpu:\n  name: lab\n  gemm_tflops: 1\n  hbm_GBps: 1\n"),
                    Catch::Contains("s.yaml:2: gpu: missing required key 'memory_GiB'"));
  CHECK_THROWS_WITH(parse("gpu:\n  name: h200\n  gemm_tflop: 1\n"),
                    Catch::Contains("s.yaml:3: gpu.gemm_tflop: unknown key"));
  CHECK_THROWS_WITH(parse("gpu:\n  name: h200\n  hbm_GBps: 1\n  hbm_GBps: 2\n"),
                    Catch::Contains("s.yaml:4: gpu.hbm_GBps: repeated key"));
  CHECK_THROWS_WITH(parse("gpu:\n  name: h200\n  gemm_tflops: -5\n"), Catch::Contains("s.yaml:3: gpu.gemm_tflops"));
  CHECK_THROWS_WITH(parse("gpu:\n  name: h200\n  small_shape_efficiency: [[256, 0.5], [128, 0.9]]\n"),
                    Catch::Contains("strictly increasing"));
  CHECK_THROWS_WITH(parse("gpu: {name: h200, small_shape_efficiency: [[256, 1.5]]}"), Catch::Contains("(0, 1]"));
}

TEST_CASE("a calibration table survives save and load unchanged", "[calibration]") {
  const auto table = sample_table();
  const auto file = dmuon::test::temp_path("calibration.yaml");
  save_calibration(table, file);
  const auto back = load_calibration(file);
  std::filesystem::remove(file);
  CHECK(back.gpu == table.gpu);
  CHECK(back.source == table.source);
  CHECK(back.gemm_tflops == table.gemm_tflops);
  CHECK(back.hbm_GBps == table.hbm_GBps);
  REQUIRE(back.ns.size() == table.ns.size());
  for (std::size_t i = 0; i < table.ns.size(); ++i) {
    const auto &a = table.ns[i], &b = back.ns[i];
    CHECK(a.rows == b.rows);
    CHECK(a.cols == b.cols);
    CHECK(a.kernel == b.kernel);
    CHECK(a.dtype == b.dtype);
    CHECK(a.steps == b.steps);
    CHECK(a.restarts == b.restarts);
    CHECK(a.batch == b.batch);
    CHECK(a.seconds == b.seconds);  // exact: the writer prints round-trip digits
  }
  CHECK(back.elementwise.momentum_GBps == table.elementwise.momentum_GBps);
  CHECK(!back.elementwise.update_GBps);
  CHECK(back.elementwise.adamw_GBps == table.elementwise.adamw_GBps);
}

TEST_CASE("calibration loading rejects bad files naming file:line:key", "[calibration]") {
  CHECK(parse_text(kValidCalibration).ns.size() == 1);
  CHECK_THROWS_WITH(parse_text(replaced(kValidCalibration, "seconds: 0.0001", "seconds: 0")),
                    Catch::Contains("calib.yaml:6: ns[0].seconds: must be > 0"));
  CHECK_THROWS_WITH(parse_text(replaced(kValidCalibration, "seconds: 0.0001", "seconds: -1e-3")),
                    Catch::Contains("ns[0].seconds: must be > 0"));
  CHECK_THROWS_WITH(parse_text(replaced(kValidCalibration, "batch: 1", "batch: 1, warmup: 3")),
                    Catch::Contains("calib.yaml:6: ns[0].warmup: unknown key"));
  CHECK_THROWS_WITH(parse_text(replaced(kValidCalibration, "hbm_GBps: 2990", "hbm_GBps: 2990\nhbm_GBps: 3000")),
                    Catch::Contains("calib.yaml:5: hbm_GBps: repeated key"));
  CHECK_THROWS_WITH(parse_text(replaced(kValidCalibration, "dtype: bf16", "dtype: fp32")),
                    Catch::Contains("ns[0].dtype: expected bf16 or fp16"));
  CHECK_THROWS_WITH(parse_text(replaced(kValidCalibration, "kernel: standard", "kernel: cublas")),
                    Catch::Contains("calib.yaml:6: ns[0].kernel: unknown Newton-Schulz kernel"));
  CHECK_THROWS_WITH(parse_text(replaced(kValidCalibration, "gemm_tflops: 780\n", "")),
                    Catch::Contains("missing required key 'gemm_tflops'"));
  // The same call measured twice (here once transposed) is ambiguous.
  const std::string twice = std::string(kValidCalibration) +
      "  - {rows: 768, cols: 2048, kernel: standard, dtype: bf16, steps: 5, batch: 1, seconds: 0.0002}\n";
  CHECK_THROWS_WITH(parse_text(twice), Catch::Contains("calib.yaml:7: ns[1]: measures the same call as ns[0] (line 6)"));
  CHECK_THROWS_WITH(parse_text(replaced(kValidCalibration, "steps: 5,", "steps: 5, restarts: [7],")),
                    Catch::Contains("ns[0].restarts"));
}

TEST_CASE("cost model: calibration first, interpolation in batch, roofline otherwise", "[cost]") {
  const CostModel model(device_profile("h100-sxm"), sample_table());
  CHECK(model.gemm_tflops() == 781.25);  // the table's own measurement replaces the profile's
  // Exact entry, either orientation.
  auto t = model.ns_time(14336, 4096, NsKernel::gram, DType::fp16, 5, {2}, 1);
  CHECK(t.seconds == 4.12e-3);
  CHECK(t.source == "measured");
  CHECK(model.ns_seconds(2048, 768, NsKernel::standard, DType::bf16, 5, {}, 8) == 3.0e-4);
  // Between batches 8 and 64 of one shape: linear.
  t = model.ns_time(768, 2048, NsKernel::standard, DType::bf16, 5, {}, 36);
  CHECK(t.source == "interpolated");
  CHECK(t.seconds == Approx(3.0e-4 + (36 - 8) / 56.0 * (1.7e-3 - 3.0e-4)));
  // Beyond the measured batches: batch 64's efficiency (clamped), so seconds scale with batch.
  t = model.ns_time(768, 2048, NsKernel::standard, DType::bf16, 5, {}, 65);
  CHECK(t.source == "interpolated");
  CHECK(t.seconds == Approx(1.7e-3 * 65 / 64));
  // Another restart list, another dtype: nothing measured for that kernel and dtype: roofline.
  CHECK(model.ns_time(4096, 14336, NsKernel::gram, DType::fp16, 5, {}, 1).source == "roofline");
  CHECK(model.ns_time(4096, 14336, NsKernel::gram, DType::bf16, 5, {2}, 1).source == "roofline");
  CHECK_THROWS_WITH(CostModel(device_profile("h200"), sample_table()), Catch::Contains("measured on gpu 'h100-sxm'"));
}

TEST_CASE("roofline: flops over the efficient rate plus one launch per GEMM per batch", "[cost]") {
  const auto h100 = device_profile("h100-sxm");
  const CostModel model(h100);
  const double flops = ns_flops(NsKernel::standard, 4096, 14336, 5, {});
  const double expected = flops / (798e12 * 0.9) + 15 * h100.launch_overhead_us * 1e-6;
  const auto t = model.ns_time(4096, 14336, NsKernel::standard, DType::bf16, 5, {}, 1);
  CHECK(t.source == "roofline");
  CHECK(t.seconds == Approx(expected));
  // A batch of 64 small matrices pays the launches once: far cheaper than 64 calls.
  const double one = model.ns_seconds(768, 2048, NsKernel::gram, DType::fp16, 5, {2}, 1);
  const double batch = model.ns_seconds(768, 2048, NsKernel::gram, DType::fp16, 5, {2}, 64);
  CHECK(batch < 0.5 * 64 * one);
  CHECK(batch > 63 * (one - 18 * h100.launch_overhead_us * 1e-6));
  CHECK_THROWS_WITH(model.ns_seconds(64, 64, NsKernel::standard, DType::fp32, 5, {}, 1),
                    Catch::Contains("no roofline for fp32"));
  CHECK_THROWS_AS(model.ns_seconds(64, 64, NsKernel::standard, DType::bf16, 5, {}, 0), Error);
}

TEST_CASE("elementwise ops are bandwidth-bound; byte counts per element", "[cost]") {
  CHECK(CostModel::momentum_bytes(1000) == 12000);
  CHECK(CostModel::muon_update_bytes(1000) == 12000);
  CHECK(CostModel::adamw_bytes(1000) == 28000);
  const CostModel plain(device_profile("h100-sxm"));
  const double launch = plain.device().launch_overhead_us * 1e-6;
  CHECK(plain.elementwise_seconds(3e9) == Approx(1e-3 + launch));
  const CostModel calibrated(device_profile("h100-sxm"), sample_table());
  CHECK(calibrated.elementwise_seconds(2.6e9, ElementwiseKind::momentum) == Approx(1e-3 + launch));
  // No update rate measured: the table's copy bandwidth.
  CHECK(calibrated.elementwise_seconds(2.9905e9, ElementwiseKind::muon_update) == Approx(1e-3 + launch));
  CHECK_THROWS_AS(plain.elementwise_seconds(-1), Error);
}
