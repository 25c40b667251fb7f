// The simulator follows a calibration's measured NCCL curves for collectives inside one node
// (issue 12): a lone collective takes the curve's time within 1%, at the points and between
// them, in both modes, through the path dmuon-sim uses (apply_measured_collectives, simulate);
// concurrent traffic still shares the links; inter-node collectives stay modelled. The shares
// of predicted time by source sum to 1 and become "measured" when the calibration covers all.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "catch_compat.hpp"
#include "test_temp_dir.hpp"
#include "core/io/scenario.hpp"
#include "sim/measured_collectives.hpp"
#include "sim/strategy_run.hpp"
#include "sim_test_support.hpp"

using namespace dmuon;
using namespace dmuon::simtest;

namespace {

const SizeCurve kAllGather{{{4096, 1.2e-05}, {1048576, 2.5e-05}, {67108864, 4.0e-04}, {1073741824, 6.0e-03}}};

CalibrationTable table_with(std::vector<CollectiveCurve> curves) {
  CalibrationTable t;
  t.gpu = "h100-sxm";
  t.gemm_tflops = 750;
  t.hbm_GBps = 3000;
  t.collectives = std::move(curves);
  return t;
}

sim::CollectiveCall all_gather(std::vector<int> members, double bytes) {
  sim::CollectiveCall c;
  c.kind = OpKind::all_gather;
  c.members = std::move(members);
  c.bytes = bytes;
  return c;
}

double simulated(sim::StepProgram program, const ClusterSpec& cluster, const CostModel& cost, SimMode mode) {
  sim::apply_measured_collectives(program, cost, static_cast<int>(cluster.gpus_per_node));
  sim::SimOptions o;
  o.mode = mode;
  return sim::simulate(program, cluster, o).collectives.at(0).seconds();
}

}  // namespace

TEST_CASE("a lone intra-node all-gather takes its measured curve's time", "[sim][calibration]") {
  const CostModel cost(device_profile("h100-sxm"), table_with({{OpKind::all_gather, 2, 1, kAllGather}}));
  const ClusterSpec cl = cluster(1, 2);
  // Points, between points (power law), below the first (floor: the wait without traffic) and
  // above the last (its rate).
  for (double bytes : {4096.0, 1048576.0, 67108864.0, 1073741824.0, 3e5, 5e6, 2e8, 1024.0, 2147483648.0}) {
    for (SimMode mode : {SimMode::fast, SimMode::flows}) {
      INFO(bytes << " bytes, mode " << to_string(mode));
      const auto program = one_collective(all_gather(ranks(2), bytes), 2);
      CHECK(simulated(program, cl, cost, mode) == Approx(kAllGather.seconds_at(bytes)).epsilon(0.01));
    }
  }
}

TEST_CASE("collective_step_overhead_us adds its time per NCCL call to a measured multi-GPU collective", "[sim][calibration]") {
  CalibrationTable t = table_with({{OpKind::all_gather, 2, 1, kAllGather}, {OpKind::all_gather, 1, 1, kAllGather}});
  t.collective_step_overhead_us = 6.5;
  const CostModel cost(device_profile("h100-sxm"), t);
  for (double bytes : {4096.0, 5e6, 1073741824.0}) {
    for (SimMode mode : {SimMode::fast, SimMode::flows}) {
      INFO(bytes << " bytes, mode " << to_string(mode));
      auto program = one_collective(all_gather(ranks(2), bytes), 2);
      CHECK(simulated(program, cluster(1, 2), cost, mode) == Approx(kAllGather.seconds_at(bytes) + 6.5e-6).epsilon(0.01));
      program.collectives[0].calls = 3;  // three NCCL calls in one launch: three overheads
      CHECK(simulated(program, cluster(1, 2), cost, mode) == Approx(kAllGather.seconds_at(bytes) + 3 * 6.5e-6).epsilon(0.01));
    }
  }
  // One GPU: a local copy, not an NCCL exchange; the multi-GPU overhead is not added, the
  // one-GPU key once a launch, whatever its calls.
  auto local = one_collective(all_gather({0}, 2e6), 1);
  CHECK(simulated(local, cluster(1, 1), cost, SimMode::fast) == Approx(kAllGather.seconds_at(2e6)).epsilon(1e-9));
  t.local_collective_step_overhead_us = 1.5;
  const CostModel with_local(device_profile("h100-sxm"), t);
  CHECK(simulated(local, cluster(1, 1), with_local, SimMode::fast) ==
        Approx(kAllGather.seconds_at(2e6) + 1.5e-6).epsilon(1e-9));
  local.collectives[0].calls = 3;  // + the cheapest measured call for each extra call, one step overhead
  CHECK(simulated(local, cluster(1, 1), with_local, SimMode::fast) ==
        Approx(kAllGather.seconds_at(2e6) + 2 * 1.2e-05 + 1.5e-6).epsilon(1e-9));
}

TEST_CASE("a one-GPU group's extra calls cost the cheapest measured call of their kind", "[sim][calibration]") {
  // As measured on one H100: in place on one rank a broadcast launches nothing (a flat 0.5 us),
  // a reduce runs a kernel (3.8 us at its cheapest; its first point is a noisier 4.5 us).
  const SizeCurve broadcast{{{4096, 5e-07}, {1048576, 5e-07}, {1073741824, 5e-07}}};
  const SizeCurve reduce{{{4096, 4.5e-06}, {65536, 3.8e-06}, {1048576, 4.3e-06}, {1073741824, 8.6e-04}}};
  CalibrationTable t = table_with({{OpKind::broadcast, 1, 1, broadcast}, {OpKind::reduce, 1, 1, reduce}});
  t.local_collective_step_overhead_us = 2.0;
  const CostModel cost(device_profile("h100-sxm"), t);
  REQUIRE(cost.collective_cheapest_call_seconds(OpKind::reduce, 1, 1) == 3.8e-06);
  CHECK_FALSE(cost.collective_cheapest_call_seconds(OpKind::reduce, 2, 1).has_value());
  for (OpKind kind : {OpKind::broadcast, OpKind::reduce}) {
    const SizeCurve& curve = kind == OpKind::broadcast ? broadcast : reduce;
    const double cheapest = kind == OpKind::broadcast ? 5e-07 : 3.8e-06;
    sim::CollectiveCall call = all_gather({0}, 3e7);
    call.kind = kind;
    auto program = one_collective(call, 1);
    program.collectives[0].calls = 7;  // one block's seven matrices, one NCCL call each, one group
    INFO(to_string(kind));
    CHECK(simulated(program, cluster(1, 1), cost, SimMode::fast) ==
          Approx(curve.seconds_at(3e7) + 6 * cheapest + 2e-6).epsilon(1e-9));
  }
}

TEST_CASE("with local_grouped_calls a one-GPU group's extra calls cost what the probe measured", "[sim][calibration]") {
  // The H100 traces of 2026-11-27: qwen2-0.5b's 29.8 MB groups of twelve all-reduces took 3.5 us
  // a call past the first, the curve's cheapest isolated call 4.85 us.
  const SizeCurve all_reduce{{{4096, 4.85e-06}, {1048576, 5.2e-06}, {1073741824, 8.6e-04}}};
  CalibrationTable t = table_with({{OpKind::all_reduce, 1, 1, all_reduce}});
  t.local_collective_step_overhead_us = 2.0;
  sim::CollectiveCall call = all_gather({0}, 2.98e7);
  call.kind = OpKind::all_reduce;
  auto program = one_collective(call, 1);
  program.collectives[0].calls = 12;
  const double before = simulated(program, cluster(1, 1), CostModel(device_profile("h100-sxm"), t), SimMode::fast);
  CHECK(before == Approx(all_reduce.seconds_at(2.98e7) + 11 * 4.85e-06 + 2e-6).epsilon(1e-9));
  t.local_grouped_calls = {{OpKind::all_reduce, {{1 << 20, 3.2e-06}, {1 << 26, 3.8e-06}}}};
  const double extra = 3.2e-06 + std::log(2.98e7 / (1 << 20)) / std::log(64.0) * 0.6e-06;
  const double after = simulated(program, cluster(1, 1), CostModel(device_profile("h100-sxm"), t), SimMode::fast);
  CHECK(after == Approx(all_reduce.seconds_at(2.98e7) + 11 * extra + 2e-6).epsilon(1e-9));
  CHECK(after < before);
}

TEST_CASE("measured collectives still share links; other shapes stay modelled", "[sim][calibration]") {
  const CostModel cost(device_profile("h100-sxm"), table_with({{OpKind::all_gather, 2, 1, kAllGather}}));
  SECTION("two measured all-gathers at once on the same GPUs share NVLink") {
    const double bytes = 1073741824.0;
    auto program = one_collective(all_gather(ranks(2), bytes), 2);
    program.collectives.push_back(program.collectives[0]);
    for (int r : {0, 1}) {
      sim::SimOp op = program.ranks[static_cast<std::size_t>(r)][0];
      op.stream = sim::kReduceStream;
      op.collective = 1;
      program.ranks[static_cast<std::size_t>(r)].push_back(op);
    }
    const double alone = kAllGather.seconds_at(bytes);
    CHECK(simulated(program, cluster(1, 2), cost, SimMode::fast) > 1.8 * alone);
  }
  SECTION("an all-gather over two nodes, or of another communicator size, is the link model") {
    const double bytes = 67108864.0;
    for (const auto& [cl, members] : {std::pair{cluster(2, 1), ranks(2)}, std::pair{cluster(1, 4), ranks(4)}}) {
      const auto program = one_collective(all_gather(members, bytes), static_cast<int>(cl.world_size()));
      const CostModel plain(device_profile("h100-sxm"));
      CHECK(simulated(program, cl, cost, SimMode::fast) == simulated(program, cl, plain, SimMode::fast));
    }
  }
  SECTION("a one-GPU collective follows its (kind, 1, 1) curve") {
    const SizeCurve local{{{4096, 5e-06}, {1073741824, 5e-04}}};
    const CostModel one(device_profile("h100-sxm"), table_with({{OpKind::all_gather, 1, 1, local}}));
    const auto program = one_collective(all_gather({0}, 2e6), 1);
    CHECK(simulated(program, cluster(1, 1), one, SimMode::fast) == Approx(local.seconds_at(2e6)).epsilon(1e-9));
  }
}

TEST_CASE("all-to-all curves are read at the busiest member's bytes", "[sim][calibration]") {
  sim::CollectiveCall c;
  c.kind = OpKind::all_to_all;
  c.members = ranks(3);
  c.transfers = {{0, 1, 100}, {0, 2, 50}, {1, 2, 400}, {2, 0, 10}};
  CHECK(sim::curve_bytes(c) == 450);  // rank 2 receives 50 + 400
  c.kind = OpKind::broadcast;
  c.bytes = 1234;
  CHECK(sim::curve_bytes(c) == 1234);
}

namespace {

// A 2-layer model on one node of two H100s, with a measured fwd+bwd total.
Scenario small_scenario() {
  return parse_scenario(R"(name: tiny
model: {name: tiny, transformer: {hidden: 256, layers: 2, heads: 4, ffn: 512, vocab: 1000}}
optimizer: {preset: torch}
cluster:
  nodes: 1
  gpus_per_node: 2
  gpu: h100-sxm
  nvlink: {bw_GBps: 450, latency_us: 3}
training: {seq_len: 128, micro_batch: 1, fwd_bwd_seconds: 0.01}
)",
                        "tiny.yaml");
}

// Every Newton-Schulz call of the model (each shape, batches 1..64), every elementwise kernel
// and every collective kind on 1 and 2 GPUs: nothing left to the datasheet.
CalibrationTable covering(const Scenario& s) {
  CalibrationTable t = table_with({});
  const Routing routing = route_parameters(s.model, s.routing);
  std::set<std::pair<long, long>> shapes;
  for (const auto& m : routing.muon_matrices) shapes.insert({std::min(m.rows, m.cols), std::max(m.rows, m.cols)});
  const NsConfig& ns = s.optimizer.muon.ns;
  for (const auto& [m, n] : shapes) {
    for (int b = 1; b <= 64; ++b) t.ns.push_back({m, n, ns_kernel_of(ns), ns.compute_dtype, ns.steps, ns.restarts, b, 1e-5 * b});
  }
  const SizeCurve curve{{{1024, 5e-06}, {1073741824, 5e-04}}};
  t.elementwise_curves = {curve, curve, curve, curve};
  for (OpKind k : {OpKind::broadcast, OpKind::reduce, OpKind::all_reduce, OpKind::all_gather, OpKind::reduce_scatter,
                   OpKind::all_to_all}) {
    for (int ranks : {1, 2}) t.collectives.push_back({k, ranks, 1, curve});
  }
  return t;
}

double total(const std::map<std::string, double>& shares) {
  double sum = 0;
  for (const auto& [k, v] : shares) sum += v;
  return sum;
}

}  // namespace

TEST_CASE("source shares sum to 1 and are all measured when the calibration covers everything", "[sim][calibration]") {
  const Scenario s = small_scenario();
  const DeviceProfile h100 = device_profile("h100-sxm");
  sim::RunOptions options;
  options.check_memory = false;
  for (Strategy strategy : {Strategy::adamw, Strategy::ddp_redundant, Strategy::dedicated}) {
    INFO(to_string(strategy));
    const auto datasheet = sim::run_strategy(s, strategy, CostModel(h100), options);
    CHECK(total(datasheet.source_shares) == Approx(1));
    // fwd_bwd_seconds is a measured total; the rest (optimizer, collectives) is the datasheet.
    CHECK(datasheet.source_shares.at("datasheet") > 0);
    CHECK(datasheet.source_shares.at("interpolated") == 0);
    const auto measured = sim::run_strategy(s, strategy, CostModel(h100, covering(s)), options);
    CHECK(total(measured.source_shares) == Approx(1));
    CHECK(measured.source_shares.at("measured") == Approx(1));
    CHECK(measured.source_shares.at("datasheet") == 0);
  }
}

TEST_CASE("cluster.calibration names the file relative to the scenario; the cost model reads it", "[sim][calibration]") {
  const auto dir = dmuon::test::temp_dir();
  std::filesystem::create_directories(dir / "calibration");
  save_calibration(table_with({{OpKind::all_gather, 2, 1, kAllGather}}), (dir / "calibration" / "h100.yaml").string());
  const std::string head = "name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 128, vocab: 100}}\n"
                           "cluster:\n  gpus_per_node: 2\n  gpu: h100-sxm\n  nvlink: {bw_GBps: 450}\n";
  const auto write = [&](const std::string& text) {
    const auto file = (dir / "s.yaml").string();
    std::ofstream(file) << text;
    return file;
  };
  const Scenario s = load_scenario(write(head + "  calibration: calibration/h100.yaml\n"));
  CHECK(s.calibration_file == (dir / "calibration" / "h100.yaml").string());
  const CostModel cost = sim::scenario_cost_model(s);
  CHECK(cost.collective_seconds(OpKind::all_gather, 2, 1, 4096) == 1.2e-05);
  CHECK_THROWS_WITH(load_scenario(write(head + "  calibration: calibration/none.yaml\n")),
                    Catch::Contains("s.yaml:7: cluster.calibration: calibration file"));
  CHECK_THROWS_WITH(load_scenario(write(head + "  calibration: calibration/h100.yaml\ncalibration: calibration/h100.yaml\n")),
                    Catch::Contains("the calibration is given twice"));
}
