// Calibration file v2 (core/cost/calibration.hpp): strict reading with file:line: key, exact round
// trips, and the cost model's use of it against closed forms: size curves (power law between
// points), Newton-Schulz efficiency interpolation, elementwise curves, collective curves.
#include <cmath>
#include <limits>
#include <string>

#include "catch_compat.hpp"
#include "test_temp_dir.hpp"
#include "core/cost/calibration.hpp"
#include "core/error.hpp"
#include "core/cost/ns_flops.hpp"

using namespace dmuon;

namespace {

const char* kV2 = R"Y(gpu: h200
source: "dmuon-bench calibrate (test fixture)"
gemm_tflops: 800
hbm_GBps: 4000
ns:
  - {rows: 2048, cols: 768, kernel: standard, dtype: bf16, steps: 5, batch: 1, seconds: 0.0001}
commit: 73d22eb
date: "2026-11-23 11:02 UTC"
machine: "2 x NVIDIA H200"
launch_overhead_us: 2.5
elementwise_curves:
  momentum: [[4096, 3.0e-06], [1048576, 4.0e-06], [1073741824, 0.0004]]
  copy: [[4096, 2.0e-06], [1073741824, 0.0003]]
collectives:
  - {kind: all_gather, ranks: 2, nodes: 1, points: [[4096, 1.2e-05], [1048576, 2.5e-05], [1073741824, 0.008]]}
  - {kind: all_reduce, ranks: 2, nodes: 1, points: [[4096, 1.5e-05], [1073741824, 0.012]]}
forward_backward:
  source: "measure_layers.py (test fixture)"
  elementwise_GBps: 2900
  gemm: [{tokens: 4096, in: 2048, out: 11008, forward_s: 0.0004, backward_s: 0.0008}]
  attention: [{samples: 2, seq_len: 2048, heads: 16, kv_heads: 2, head_dim: 128, forward_s: 0.0003, backward_s: 0.0009}]
  layers: [{model: qwen2.5-3b, part: block, micro_batch: 2, seq_len: 2048, forward_s: 0.002, backward_s: 0.004}]
  host_floor:
    - {model: qwen2.5-3b, mode: eager, micro_batch: 1, seq_len: 32, layers: [2, 6], fwd_bwd_s: [0.012, 0.026], per_layer_s: 0.0035, per_step_s: 0.005}
    - {model: qwen2.5-3b, mode: fsdp2, micro_batch: 1, seq_len: 32, layers: [2, 6], fwd_bwd_s: [0.02, 0.05], per_layer_s: 0.0075, per_step_s: 0.005}
)Y";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::logic_error("fixture has no '" + from + "'");
  text.replace(at, from.size(), to);
  return text;
}

CalibrationTable parse_text(const std::string& text) { return parse_calibration(YamlValue::load_string(text, "c.yaml")); }

DeviceProfile h200() { return device_profile("h200"); }

}  // namespace

TEST_CASE("a v2 calibration file loads every key", "[calibration]") {
  const auto t = parse_text(kV2);
  CHECK(t.commit == "73d22eb");
  CHECK(t.date == "2026-11-23 11:02 UTC");
  CHECK(t.machine == "2 x NVIDIA H200");
  CHECK(t.launch_overhead_us == 2.5);
  CHECK(t.elementwise_curves.momentum.points.size() == 3);
  CHECK(t.elementwise_curves.copy.points.size() == 2);
  CHECK(t.elementwise_curves.adamw.empty());
  REQUIRE(t.collectives.size() == 2);
  CHECK(t.collectives[0].kind == OpKind::all_gather);
  CHECK(t.collectives[0].curve.points[1] == std::pair<double, double>{1048576, 2.5e-05});
  REQUIRE(t.forward_backward);
  CHECK(t.forward_backward->elementwise_GBps == 2900);
  REQUIRE(t.forward_backward->gemm.size() == 1);
  CHECK(t.forward_backward->gemm[0].out_features == 11008);
  CHECK(t.forward_backward->attention.at(0).kv_heads == 2);
  CHECK(t.forward_backward->layers.at(0).part == "block");
  REQUIRE(t.forward_backward->host_floor.size() == 2);
  const HostFloor* fsdp2 = host_floor_of(t.forward_backward->host_floor, HostFloorMode::fsdp2);
  REQUIRE(fsdp2);
  CHECK(fsdp2->per_layer_s == 0.0075);
  CHECK(fsdp2->fwd_bwd_s == std::vector<double>{0.02, 0.05});
  CHECK(fsdp2->layers == std::vector<long>{2, 6});
  CHECK(fsdp2->world == 1);  // absent: one GPU
}

TEST_CASE("the calibration reader refuses bad v2 files naming file:line: key", "[calibration]") {
  const auto fails = [](const std::string& text, const std::string& message) {
    INFO(message);
    CHECK_THROWS_WITH(parse_text(text), Catch::Contains(message));
  };
  fails(replaced(kV2, "ranks: 2, nodes: 1, points: [[4096, 1.2e-05]", "ranks: 2, nodes: 1, busbw: 3, points: [[4096, 1.2e-05]"),
        "c.yaml:15: collectives[0].busbw: unknown key");
  fails(replaced(kV2, "[1048576, 2.5e-05]", "[4096, 2.5e-05]"),
        "c.yaml:15: collectives[0].points[1]: x must be > 0 and strictly increasing");
  fails(replaced(kV2, "[1048576, 4.0e-06]", "[1024, 4.0e-06]"),
        "c.yaml:12: elementwise_curves.momentum[1]: x must be > 0 and strictly increasing");
  fails(replaced(kV2, "kind: all_reduce, ranks: 2", "kind: all_gather, ranks: 2"),
        "c.yaml:16: collectives[1]: measures the same call as collectives[0] (line 15)");
  fails(replaced(kV2, "kind: all_reduce", "kind: allreduce"), "c.yaml:16: collectives[1].kind: unknown collective kind 'allreduce'");
  fails(replaced(kV2, "kind: all_reduce", "kind: momentum"), "collectives[1].kind: unknown collective kind 'momentum'");
  fails(replaced(kV2, "[4096, 1.5e-05]", "[4096, 0]"), "c.yaml:16: collectives[1].points[0]: seconds must be > 0");
  fails(replaced(kV2, "[4096, 1.5e-05]", "[4096, -1e-05]"), "collectives[1].points[0]: seconds must be > 0");
  fails(replaced(kV2, "forward_s: 0.0004", "forward_s: 0"), "c.yaml:20: forward_backward.gemm[0].forward_s: must be > 0");
  fails(replaced(kV2, "ranks: 2, nodes: 1, points: [[4096, 1.5e", "ranks: 2, nodes: 3, points: [[4096, 1.5e"),
        "collectives[1].nodes: a communicator of 2 ranks spans at most that many nodes");
  fails(replaced(kV2, "[[4096, 1.5e-05], [1073741824, 0.012]]", "[]"), "collectives[1].points: needs at least one");
  fails(replaced(kV2, "[1073741824, 0.012]", "[1073741824]"), "collectives[1].points[1]: expected [x, seconds]");
  fails(replaced(kV2, "part: block", "part: mlp"), "c.yaml:22: forward_backward.layers[0].part: expected block, embedding, head or whole");
  fails(replaced(kV2, "part: block", "part: whole"), "c.yaml:22: forward_backward.layers[0]: missing required key 'layers'");
  fails(replaced(kV2, "part: block,", "part: whole, layers: 36,"),
        "forward_backward.layers[0]: a whole entry needs the block of qwen2.5-3b at its micro_batch and seq_len");
  fails(replaced(kV2, "per_layer_s: 0.0035, per_step_s: 0.005", "per_layer_s: 0.0035, per_step_s: -0.01"),
        "forward_backward.host_floor[0].per_step_s: too negative: the line prices 2 layers at or below zero");
  fails(replaced(kV2, "part: block,", "part: block, layers: 36,"), "forward_backward.layers[0].layers: only a whole entry has layers");
  {
    const std::string block = "{model: qwen2.5-3b, part: block, micro_batch: 2, seq_len: 2048, forward_s: 0.002, backward_s: 0.004}";
    fails(replaced(kV2, block, block + ", " + block), "forward_backward.layers[1]: a second entry for qwen2.5-3b block");
    const std::string whole = "{model: m, part: whole, layers: 2, micro_batch: 2, seq_len: 2048, forward_s: 0.1, backward_s: 0.2}";
    fails(replaced(kV2, block, block + ", " + whole + ", " + replaced(whole, "model: m", "model: n")),
          "forward_backward.layers[2]: a second whole entry");
  }
  fails(replaced(kV2, "  source: \"measure_layers.py (test fixture)\"\n", ""), "forward_backward: missing required key 'source'");
  fails(replaced(kV2, "kv_heads: 2", "kv_heads: 3"), "forward_backward.attention[0].kv_heads: must divide heads (16)");
  fails(replaced(kV2, "launch_overhead_us: 2.5", "launch_overhead_us: 0"), "c.yaml:10: launch_overhead_us: must be > 0");
  fails(replaced(kV2, "launch_overhead_us: 2.5", "launch_overhead_us: 2.5\nlaunch_overhead_us: 3"),
        "launch_overhead_us: repeated key");
  fails(replaced(kV2, "  copy:", "  cast:"), "c.yaml:13: elementwise_curves.cast: unknown key");
  fails(replaced(kV2, "commit: 73d22eb", "commit: \"\""), "c.yaml:7: commit: must not be empty");
  fails(replaced(kV2, "mode: fsdp2", "mode: ddp"), "c.yaml:25: forward_backward.host_floor[1].mode: expected eager or fsdp2, got 'ddp'");
  fails(replaced(kV2, "mode: fsdp2", "mode: eager"), "c.yaml:25: forward_backward.host_floor[1]: a second host floor for mode eager");
  fails(replaced(kV2, "per_layer_s: 0.0035", "per_layer_s: -0.001"), "forward_backward.host_floor[0].per_layer_s: must be > 0");
  fails(replaced(kV2, "fwd_bwd_s: [0.012, 0.026]", "fwd_bwd_s: [0.012]"), "host_floor[0].fwd_bwd_s: needs one time per entry of layers");
  fails(replaced(kV2, "fwd_bwd_s: [0.012, 0.026]", "fwd_bwd_s: [0.012, 0]"), "host_floor[0].fwd_bwd_s: times must be > 0");
  fails(replaced(kV2, "per_step_s: 0.005}", "per_step_s: 0.005, hosts: 2}"), "forward_backward.host_floor[0].hosts: unknown key");
  fails(replaced(kV2, "mode: fsdp2, micro_batch: 1", "mode: fsdp2, world: 0, micro_batch: 1"),
        "c.yaml:25: forward_backward.host_floor[1].world");
  const std::string two_gemms = replaced(kV2, "backward_s: 0.0008}]", "backward_s: 0.0008}, {tokens: 4096, in: 2048, out: 11008, forward_s: 1, backward_s: 2}]");
  fails(two_gemms, "forward_backward.gemm[1]: measures the same call as forward_backward.gemm[0]");
}

TEST_CASE("v1 calibration files still load; save -> load is exact", "[calibration]") {
  const auto v1 = load_calibration(std::string(DMUON_SOURCE_DIR) + "/tests/data/calibration-v1-h100-sxm.yaml");  // the v1 file of 2026-11-22, before `calibrate` existed
  CHECK(v1.gpu == "h100-sxm");
  CHECK(!v1.ns.empty());
  CHECK(v1.collectives.empty());
  CHECK(!v1.forward_backward);
  CHECK(!v1.launch_overhead_us);
  for (const auto& table : {v1, parse_text(kV2)}) {
    const auto file = dmuon::test::temp_path("round-trip.yaml");
    save_calibration(table, file);
    const auto back = load_calibration(file);
    CHECK(back == table);  // every key, every number bit for bit
    CHECK(calibration_to_yaml(back) == calibration_to_yaml(table));
  }
  // A number that needs all 17 digits survives too.
  auto t = parse_text(kV2);
  t.collective_step_overhead_us = 6.0 + 0.1 + 0.2;
  t.local_collective_step_overhead_us = 1.0 + 0.1 + 0.2;
  t.adamw_fused_issue_us = 2.0 + 0.1 + 0.2;
  t.adamw_fused_vs_curve = 1.0 + 0.1 + 0.2;
  t.compute_slowdown_beside_nccl = 0.1 + 0.2;
  t.collective_slowdown_beside_compute = 0.7 + 0.1;
  t.collectives[0].curve.points[0].second = 0.1 + 0.2;
  t.forward_backward->layers[0].backward_s = std::nextafter(0.004, 1.0);
  t.forward_backward->layers.push_back({"qwen2.5-3b", "embedding", 2, 2048, 1e-4, 3e-4});
  t.forward_backward->layers.push_back({"qwen2.5-3b", "head", 2, 2048, 2e-3, 3e-3});
  t.forward_backward->layers.push_back({"qwen2.5-3b", "whole", 2, 2048, 0.1 + 0.2, 0.4, 36});  // with its layers
  t.forward_backward->host_floor[0].per_step_s = -(0.1 + 0.2) / 1000;  // the line stays above 0 at its depths
  t.forward_backward->host_floor[1].world = 2;  // emitted only when not 1
  CHECK(parse_text(calibration_to_yaml(t)) == t);
}

TEST_CASE("collective_step_overhead_us: read, >= 0, in seconds from the cost model, 0 without it", "[calibration]") {
  const std::string with = replaced(kV2, "launch_overhead_us: 2.5", "launch_overhead_us: 2.5\ncollective_step_overhead_us: 6.5");
  const auto t = parse_text(with);
  CHECK(t.collective_step_overhead_us == 6.5);
  CHECK(CostModel(h200(), t).collective_step_overhead_s() == Approx(6.5e-6).epsilon(1e-15));
  CHECK(CostModel(h200(), parse_text(kV2)).collective_step_overhead_s() == 0);
  CHECK(CostModel(h200()).collective_step_overhead_s() == 0);
  const auto local = parse_text(replaced(with, "overhead_us: 6.5", "overhead_us: 6.5\nlocal_collective_step_overhead_us: 1.5"));
  CHECK(local.local_collective_step_overhead_us == 1.5);
  CHECK(CostModel(h200(), local).local_collective_step_overhead_s() == Approx(1.5e-6).epsilon(1e-15));
  CHECK(CostModel(h200(), t).local_collective_step_overhead_s() == 0);
  CHECK_THROWS_WITH(parse_text(replaced(with, "overhead_us: 6.5", "overhead_us: 6.5\nlocal_collective_step_overhead_us: -2")),
                    Catch::Contains("local_collective_step_overhead_us: must be >= 0"));
  CHECK(parse_text(replaced(with, "overhead_us: 6.5", "overhead_us: 0")).collective_step_overhead_us == 0);
  CHECK_THROWS_WITH(parse_text(replaced(with, "overhead_us: 6.5", "overhead_us: -1")),
                    Catch::Contains("c.yaml:11: collective_step_overhead_us: must be >= 0"));
  CHECK_THROWS_WITH(parse_text(replaced(with, "overhead_us: 6.5", "overhead_us: fast")),
                    Catch::Contains("collective_step_overhead_us"));
}

TEST_CASE("a size curve is a power law between points, a floor below, a constant rate above", "[calibration]") {
  // seconds = 1e-5 (x / 1024)^0.5 from 1024 to 4096, then (x / 4096)^1 x 2e-5 up to 16384.
  const SizeCurve c{{{1024, 1e-5}, {4096, 2e-5}, {16384, 8e-5}}};
  CHECK(c.seconds_at(1024) == 1e-5);
  CHECK(c.seconds_at(4096) == 2e-5);
  CHECK(c.seconds_at(16384) == 8e-5);
  CHECK(c.seconds_at(2048) == Approx(1e-5 * std::sqrt(2.0)).epsilon(1e-12));
  CHECK(c.seconds_at(3000) == Approx(1e-5 * std::pow(3000 / 1024.0, 0.5)).epsilon(1e-12));
  CHECK(c.seconds_at(8192) == Approx(4e-5).epsilon(1e-12));
  CHECK(c.seconds_at(10) == 1e-5);  // launch/latency floor
  CHECK(c.seconds_at(0) == 1e-5);
  CHECK(c.seconds_at(65536) == Approx(3.2e-4).epsilon(1e-12));  // the last point's bytes/s
  CHECK_THROWS_AS(c.seconds_at(-1), Error);
  CHECK_THROWS_AS(c.seconds_at(std::nan("")), Error);
  CHECK_THROWS_AS(SizeCurve{}.seconds_at(1), Error);
}

TEST_CASE("Newton-Schulz efficiency is interpolated in log2 m, log2 n, log2 batch", "[calibration][cost]") {
  // A grid from an efficiency linear in the logs: interpolation must reproduce it in between.
  const auto efficiency = [](double m, double n, double b) {
    return 0.05 + 0.03 * std::log2(m) + 0.02 * std::log2(n) + 0.04 * std::log2(b);
  };
  CalibrationTable t;
  t.gpu = "h200";
  t.gemm_tflops = 800;
  t.hbm_GBps = 4000;
  const double rate = 800e12;
  for (long m : {256L, 1024L, 4096L}) {
    for (long n : {4096L, 8192L, 16384L}) {
      for (int b : {1, 4}) {
        const double flops = ns_flops(NsKernel::gram, m, n, 5, {2}) * b;
        t.ns.push_back({n, m, NsKernel::gram, DType::fp16, 5, {2}, b, flops / (efficiency(m, n, b) * rate)});
      }
    }
  }
  const CostModel model(h200(), t);
  const auto expect = [&](long m, long n, int b, double e, const char* source) {
    INFO(m << "x" << n << " batch " << b);
    const auto got = model.ns_time(m, n, NsKernel::gram, DType::fp16, 5, {2}, b);
    CHECK(got.source == std::string(source));
    CHECK(got.seconds == Approx(ns_flops(NsKernel::gram, m, n, 5, {2}) * b / (e * rate)).epsilon(1e-12));
  };
  SECTION("measured entries answer exactly") {
    for (const auto& e : t.ns) {
      const auto got = model.ns_time(e.rows, e.cols, e.kernel, e.dtype, e.steps, e.restarts, e.batch);
      CHECK(got.seconds == e.seconds);
      CHECK(got.source == "measured");
    }
  }
  SECTION("between grid points: the linear function exactly") {
    expect(512, 6000, 1, efficiency(512, 6000, 1), "interpolated");
    expect(2048, 12000, 4, efficiency(2048, 12000, 4), "interpolated");
    expect(600, 5000, 2, efficiency(600, 5000, 2), "interpolated");
    expect(3000, 9000, 3, efficiency(3000, 9000, 3), "interpolated");
    expect(6000, 512, 2, efficiency(512, 6000, 2), "interpolated");  // rows x cols in either order
  }
  SECTION("outside the grid: the nearest edge, per axis") {
    expect(128, 32768, 8, efficiency(256, 16384, 4), "interpolated");
    expect(8192, 8192, 1, efficiency(4096, 8192, 1), "interpolated");
    expect(512, 2048, 1, efficiency(512, 4096, 1), "interpolated");
  }
  SECTION("a measured shape between two measured batches: seconds linear in batch") {
    const auto s1 = model.ns_seconds(1024, 8192, NsKernel::gram, DType::fp16, 5, {2}, 1);
    const auto s4 = model.ns_seconds(1024, 8192, NsKernel::gram, DType::fp16, 5, {2}, 4);
    const auto got = model.ns_time(1024, 8192, NsKernel::gram, DType::fp16, 5, {2}, 2);
    CHECK(got.source == "interpolated");
    CHECK(got.seconds == Approx(s1 + (s4 - s1) / 3).epsilon(1e-12));
  }
  SECTION("another kernel, dtype, step count or restart list: the roofline") {
    CHECK(model.ns_time(1024, 8192, NsKernel::gram, DType::fp16, 5, {3}, 1).source == "roofline");
    CHECK(model.ns_time(1024, 8192, NsKernel::gram, DType::bf16, 5, {2}, 1).source == "roofline");
    CHECK(model.ns_time(1024, 8192, NsKernel::standard, DType::fp16, 5, {}, 1).source == "roofline");
    CHECK(model.ns_time(1024, 8192, NsKernel::gram, DType::fp16, 6, {2}, 1).source == "roofline");
  }
}

TEST_CASE("elementwise: measured curve, else a measured rate, else the datasheet", "[calibration][cost]") {
  const auto t = parse_text(kV2);
  const CostModel model(h200(), t);
  auto e = model.elementwise_time(1048576, ElementwiseKind::momentum);
  CHECK(e.source == "measured");
  CHECK(e.seconds == 4.0e-06);
  e = model.elementwise_time(2 * 1073741824.0, ElementwiseKind::momentum);
  CHECK(e.seconds == Approx(8e-4).epsilon(1e-12));
  // generic: the copy curve.
  e = model.elementwise_time(100);
  CHECK(e.source == "measured");
  CHECK(e.seconds == 2.0e-06);
  // No AdamW curve and no AdamW rate: the table's hbm_GBps plus its launch_overhead_us.
  e = model.elementwise_time(4e9, ElementwiseKind::adamw);
  CHECK(e.source == "interpolated");
  CHECK(e.seconds == Approx(1e-3 + 2.5e-6).epsilon(1e-12));
  CHECK(model.launch_overhead_s() == Approx(2.5e-6).epsilon(1e-15));
  const CostModel plain(h200());
  e = plain.elementwise_time(4.8e9);
  CHECK(e.source == "datasheet");
  CHECK(plain.launch_overhead_s() == Approx(h200().launch_overhead_us * 1e-6).epsilon(1e-15));
  CHECK(e.seconds == Approx(4.8e9 / (h200().hbm_GBps * 1e9) + plain.launch_overhead_s()).epsilon(1e-12));
}

TEST_CASE("collective_seconds follows the curve of exactly that kind and communicator", "[calibration][cost]") {
  const CostModel model(h200(), parse_text(kV2));
  CHECK(model.collective_seconds(OpKind::all_gather, 2, 1, 1048576) == 2.5e-05);
  CHECK(*model.collective_seconds(OpKind::all_gather, 2, 1, 2048) == 1.2e-05);
  const double mid = std::sqrt(1048576.0 * 1073741824.0);
  CHECK(*model.collective_seconds(OpKind::all_gather, 2, 1, mid) == Approx(std::sqrt(2.5e-05 * 0.008)).epsilon(1e-12));
  CHECK(!model.collective_seconds(OpKind::all_gather, 4, 1, 1e6));
  CHECK(!model.collective_seconds(OpKind::all_gather, 2, 2, 1e6));
  CHECK(!model.collective_seconds(OpKind::broadcast, 2, 1, 1e6));
  CHECK(!CostModel(h200()).collective_seconds(OpKind::all_gather, 2, 1, 1e6));
}

TEST_CASE("source classes: measured, interpolated, datasheet", "[calibration]") {
  CHECK(source_class("measured") == "measured");
  CHECK(source_class("measured total") == "measured");
  CHECK(source_class("host floor") == "measured");
  CHECK(source_class("interpolated") == "interpolated");
  CHECK(source_class("roofline") == "datasheet");
  CHECK(source_class("datasheet") == "datasheet");
  CHECK(source_class("modelled") == "datasheet");
}

TEST_CASE("adamw_fused_issue_us and adamw_fused_vs_curve: read, checked, defaults without them", "[calibration]") {
  const std::string with =
      replaced(kV2, "launch_overhead_us: 2.5", "launch_overhead_us: 2.5\nadamw_fused_issue_us: 1.5\nadamw_fused_vs_curve: 1.04");
  const CostModel cost(h200(), parse_text(with));
  CHECK(cost.adamw_fused_issue_s() == Approx(1.5e-6).epsilon(1e-15));
  CHECK(cost.adamw_fused_vs_curve() == 1.04);
  CHECK(CostModel(h200(), parse_text(kV2)).adamw_fused_issue_s() == 0);
  CHECK(CostModel(h200(), parse_text(kV2)).adamw_fused_vs_curve() == 1);
  CHECK(CostModel(h200()).adamw_fused_vs_curve() == 1);
  CHECK(parse_text(replaced(with, "issue_us: 1.5", "issue_us: 0")).adamw_fused_issue_us == 0);
  CHECK_THROWS_WITH(parse_text(replaced(with, "issue_us: 1.5", "issue_us: -1")), Catch::Contains("adamw_fused_issue_us: must be >= 0"));
  CHECK_THROWS_WITH(parse_text(replaced(with, "vs_curve: 1.04", "vs_curve: 0")), Catch::Contains("adamw_fused_vs_curve: must be > 0"));
  CHECK_THROWS_WITH(parse_text(replaced(with, "vs_curve: 1.04", "vs_curve: 1.04\nadamw_fused_vs_curve: 2")),
                    Catch::Contains("adamw_fused_vs_curve: repeated key"));
  // A table built in code is checked by the cost model.
  auto t = parse_text(with);
  t.adamw_fused_vs_curve = 0.0;
  CHECK_THROWS_WITH(CostModel(h200(), t), Catch::Contains("adamw_fused_vs_curve must be > 0"));
  t.adamw_fused_vs_curve = 1.0;
  t.adamw_fused_issue_us = std::nan("");
  CHECK_THROWS_WITH(CostModel(h200(), t), Catch::Contains("adamw_fused_issue_us must be >= 0"));
}

TEST_CASE("compute_slowdown_beside_nccl: read, checked, none without it", "[calibration]") {
  const std::string with = replaced(kV2, "launch_overhead_us: 2.5", "launch_overhead_us: 2.5\ncompute_slowdown_beside_nccl: 0.12");
  CHECK(CostModel(h200(), parse_text(with)).compute_slowdown_beside_nccl() == 0.12);
  CHECK_FALSE(CostModel(h200(), parse_text(kV2)).compute_slowdown_beside_nccl().has_value());
  CHECK_FALSE(CostModel(h200()).compute_slowdown_beside_nccl().has_value());
  CHECK(parse_text(replaced(with, "nccl: 0.12", "nccl: 0")).compute_slowdown_beside_nccl == 0);
  CHECK_THROWS_WITH(parse_text(replaced(with, "nccl: 0.12", "nccl: -0.1")),
                    Catch::Contains("compute_slowdown_beside_nccl: must be >= 0"));
  auto t = parse_text(with);
  t.compute_slowdown_beside_nccl = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(CostModel(h200(), t), Catch::Contains("compute_slowdown_beside_nccl must be >= 0"));
}

TEST_CASE("collective_slowdown_beside_compute: read, checked, none without it", "[calibration]") {
  const std::string with =
      replaced(kV2, "launch_overhead_us: 2.5", "launch_overhead_us: 2.5\ncollective_slowdown_beside_compute: 0.8");
  CHECK(CostModel(h200(), parse_text(with)).collective_slowdown_beside_compute() == 0.8);
  CHECK_FALSE(CostModel(h200(), parse_text(kV2)).collective_slowdown_beside_compute().has_value());
  CHECK_FALSE(CostModel(h200()).collective_slowdown_beside_compute().has_value());
  CHECK_THROWS_WITH(parse_text(replaced(with, "compute: 0.8", "compute: -0.5")),
                    Catch::Contains("collective_slowdown_beside_compute: must be >= 0"));
  CHECK_THROWS_WITH(parse_text(replaced(with, "compute: 0.8", "compute: fast")),
                    Catch::Contains("collective_slowdown_beside_compute"));
  auto t = parse_text(with);
  t.collective_slowdown_beside_compute = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(CostModel(h200(), t), Catch::Contains("collective_slowdown_beside_compute must be >= 0"));
}

TEST_CASE("local_grouped_calls: read and refused with the key named, exact round trip", "[calibration]") {
  const std::string key = "launch_overhead_us: 2.5\nlocal_grouped_calls:\n"
                          "  - {kind: all_reduce, points: [[1048576, 3.5e-06], [67108864, 3.9e-06]]}\n"
                          "  - {kind: broadcast, points: [[1048576, 0]]}";
  const auto t = parse_text(replaced(kV2, "launch_overhead_us: 2.5", key));
  REQUIRE(t.local_grouped_calls.size() == 2);
  CHECK(t.local_grouped_calls[0] == LocalGroupedCalls{OpKind::all_reduce, {{1048576, 3.5e-06}, {67108864, 3.9e-06}}});
  CHECK(t.local_grouped_calls[1].points[0].second == 0);  // a call that adds nothing reads as 0
  CHECK(parse_text(calibration_to_yaml(t)) == t);
  CHECK(parse_text(kV2).local_grouped_calls.empty());
  const auto refused = [&](const std::string& from, const std::string& to) {
    return parse_text(replaced(replaced(kV2, "launch_overhead_us: 2.5", key), from, to));
  };
  CHECK_THROWS_WITH(refused("kind: broadcast", "kind: all_gather"),
                    Catch::Contains("local_grouped_calls[1].kind: only all_reduce, broadcast and reduce"));
  CHECK_THROWS_WITH(refused("kind: broadcast", "kind: all_reduce"),
                    Catch::Contains("local_grouped_calls[1]: measures the same call as local_grouped_calls[0]"));
  CHECK_THROWS_WITH(refused("[1048576, 0]", "[1048576, -1e-06]"), Catch::Contains("seconds must be finite and >= 0"));
  CHECK_THROWS_WITH(refused("[67108864, 3.9e-06]", "[1048576, 3.9e-06]"),
                    Catch::Contains("local_grouped_calls[0].points[1]: group bytes must be > 0 and strictly increasing"));
  CHECK_THROWS_WITH(refused("points: [[1048576, 0]]", "points: []"), Catch::Contains("needs at least one"));
  CHECK_THROWS_WITH(refused("kind: broadcast,", "kind: broadcast, calls: 3,"), Catch::Contains("calls"));
}

TEST_CASE("an extra call in a group: linear in log(bytes) between points, the nearest point outside", "[calibration][cost]") {
  const LocalGroupedCalls g{OpKind::all_reduce, {{1 << 20, 2e-6}, {1 << 24, 4e-6}}};
  CHECK(extra_call_seconds_at(g, 1 << 20) == 2e-6);
  CHECK(extra_call_seconds_at(g, 1 << 22) == Approx(3e-6).epsilon(1e-12));  // halfway in log2: 20 -> 22 -> 24
  CHECK(extra_call_seconds_at(g, 0) == 2e-6);
  CHECK(extra_call_seconds_at(g, 1e12) == 4e-6);  // no rate beyond the last point: the host's enqueue
  CHECK_THROWS_WITH(extra_call_seconds_at(g, -1), Catch::Contains("must be finite and >= 0"));
  CHECK_THROWS_WITH(extra_call_seconds_at(LocalGroupedCalls{OpKind::reduce, {}}, 1), Catch::Contains("reduce: no points"));
  // The slope of group time against calls: exact on a line, least squares on noise around it.
  CHECK(seconds_per_extra_call({{1, 10e-6}, {2, 13e-6}, {4, 19e-6}, {16, 55e-6}}) == Approx(3e-6).epsilon(1e-12));
  CHECK(seconds_per_extra_call({{1, 10e-6}, {2, 14e-6}, {3, 16e-6}}) == Approx(3e-6).epsilon(1e-12));
  CHECK_THROWS_WITH(seconds_per_extra_call({{4, 1e-5}, {4, 2e-5}}), Catch::Contains("at least two different call counts"));
  CHECK(issued_per_region(OpKind::all_reduce));
  CHECK_FALSE(issued_per_region(OpKind::all_gather));
}

TEST_CASE("local_extra_call_seconds: the grouped-call key, else the one-rank curve's cheapest call", "[calibration][cost]") {
  auto t = parse_text(kV2);
  t.collectives.push_back({OpKind::all_reduce, 1, 1, SizeCurve{{{4096, 6e-6}, {65536, 4.8e-6}, {1073741824, 4e-4}}}});
  CHECK(CostModel(h200(), t).local_extra_call_seconds(OpKind::all_reduce, 3e7) == 4.8e-6);  // older files
  CHECK_FALSE(CostModel(h200(), t).local_extra_call_seconds(OpKind::reduce, 3e7).has_value());
  CHECK_FALSE(CostModel(h200()).local_extra_call_seconds(OpKind::all_reduce, 3e7).has_value());
  t.local_grouped_calls = {{OpKind::all_reduce, {{1 << 20, 3.4e-6}, {1 << 26, 3.8e-6}}}, {OpKind::reduce, {{1 << 20, 3e-6}}}};
  const CostModel cost(h200(), t);
  CHECK(*cost.local_extra_call_seconds(OpKind::all_reduce, 1 << 23) == Approx(3.6e-6).epsilon(1e-12));
  CHECK(*cost.local_extra_call_seconds(OpKind::reduce, 1e9) == 3e-6);  // no curve of its own needed
}
