// The simulator's host issue model (calibration key executor_issue_us): the NCCL executor
// enqueues a rank's ops from one host thread, so a stream of short ops runs at the host's pace
// (N launches take N x the issue cost) while long ops hide it (GPU time + one issue); the
// benchmark's optimizer run restarts the host's clock after its barrier; without the key the
// simulation is the GPU-only one.
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "core/cost/device_profile.hpp"
#include "core/cost/step_overhead.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "sim/measured_collectives.hpp"
#include "sim/strategy_run.hpp"
#include "sim_test_support.hpp"

using namespace dmuon;
using namespace dmuon::simtest;

namespace {

constexpr double kIssueS = 10e-6;

// N one-GPU all-gathers in a row on the gather stream, each taking `gpu_s` on the GPU.
sim::StepProgram local_collectives(int n, double gpu_s) {
  sim::StepProgram p;
  p.ranks.resize(1);
  for (int i = 0; i < n; ++i) {
    sim::SimCollective c;
    c.call.kind = OpKind::all_gather;
    c.call.members = {0};
    c.call.bytes = 1024;
    c.calls = 1;
    c.local_seconds = gpu_s;
    c.group = "test";
    p.collectives.push_back(c);
    sim::SimOp op;
    op.stream = sim::kGatherStream;
    op.phase = Phase::forward;
    op.category = "all_gather";
    op.collective = i;
    op.launches = 1;
    p.ranks[0].push_back(op);
  }
  return p;
}

sim::StepProgram with_host(sim::StepProgram p, double issue_s) {
  for (auto& ops : p.ranks) sim::assign_issue_times(ops, issue_s, false);
  p.issue_s_per_launch = issue_s;
  return p;
}

double step_seconds(const sim::StepProgram& p) { return sim::simulate(p, cluster(1, 1), {}).step_s; }

CalibrationTable table(std::optional<double> issue_us) {
  CalibrationTable t;
  t.gpu = "h100-sxm";
  t.gemm_tflops = 750;
  t.hbm_GBps = 3000;
  t.executor_issue_us = issue_us;
  return t;
}

// A 2-layer model on `gpus` H100s of one node.
Scenario small_scenario(int gpus) {
  return parse_scenario(R"(name: tiny
model: {name: tiny, transformer: {hidden: 256, layers: 2, heads: 4, ffn: 512, vocab: 1000}}
optimizer: {preset: torch}
cluster:
  nodes: 1
  gpus_per_node: )" + std::to_string(gpus) + R"(
  gpu: h100-sxm
  nvlink: {bw_GBps: 450, latency_us: 3}
training: {seq_len: 128, micro_batch: 1, fwd_bwd_seconds: 0.01}
)",
                        "tiny.yaml");
}

sim::StepProgram program_of(const Scenario& s, Strategy strategy, const CostModel& cost, bool as_is) {
  const Routing routing = route_parameters(s.model, s.routing);
  const StepPlan sp = plan_step(s.model, routing, s.optimizer, strategy, mesh_for_cluster(s.cluster), cost);
  sim::ProgramOptions o;
  o.plan_as_is = as_is;
  sim::StepProgram p = sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training, o);
  sim::apply_measured_collectives(p, cost, static_cast<int>(s.cluster.gpus_per_node));
  return p;
}

}  // namespace

TEST_CASE("a stream of tiny one-GPU collectives runs at the host's pace", "[sim][host-issue]") {
  const int n = 200;
  const auto gpu_only = local_collectives(n, 0.5e-6);
  CHECK(step_seconds(gpu_only) == Approx(n * 0.5e-6).epsilon(1e-9));
  // The last launch is enqueued at n x issue; its 0.5 us of GPU work follows.
  CHECK(step_seconds(with_host(gpu_only, kIssueS)) == Approx(n * kIssueS).epsilon(0.01));
}

TEST_CASE("long GPU work hides the host's issue cost but the first launch", "[sim][host-issue]") {
  const int n = 20;
  const double gpu_s = 1e-3;
  CHECK(step_seconds(with_host(local_collectives(n, gpu_s), kIssueS)) == Approx(n * gpu_s + kIssueS).epsilon(1e-6));
}

TEST_CASE("without executor_issue_us the program has no host model", "[sim][host-issue]") {
  const Scenario s = small_scenario(2);
  const DeviceProfile h100 = device_profile("h100-sxm");
  for (Strategy strategy : {Strategy::adamw, Strategy::ddp_redundant, Strategy::dedicated}) {
    INFO(to_string(strategy));
    const sim::StepProgram p = program_of(s, strategy, CostModel(h100, table(std::nullopt)), false);
    CHECK_FALSE(p.issue_s_per_launch.has_value());
    for (const auto& ops : p.ranks) {
      for (const auto& op : ops) CHECK((op.issued_s == 0 && op.issued_end_s == 0 && op.issue_clock == 0));
    }
    // A zero issue cost in a real step (one clock, no barrier) changes nothing either.
    const auto plain = sim::simulate(p, s.cluster, {});
    const auto zero = sim::simulate(program_of(s, strategy, CostModel(h100, table(0.0)), false), s.cluster, {});
    CHECK(zero.step_s == plain.step_s);
    CHECK(zero.grads_ready_s == plain.grads_ready_s);
  }
}

TEST_CASE("the executor benchmark's runs: host-bound fwd/bwd, optimizer clock after the barrier", "[sim][host-issue]") {
  const Scenario s = small_scenario(1);
  const double issue_s = 7e-6;
  const CostModel cost(device_profile("h100-sxm"), table(issue_s * 1e6));
  const sim::StepProgram p = program_of(s, Strategy::adamw, cost, true);
  REQUIRE(p.issue_s_per_launch == issue_s);
  long launches[2] = {0, 0};
  for (const auto& op : p.ranks[0]) launches[op.issue_clock] += op.launches;
  // One launch per Plan collective of the fwd/bwd run; the optimizer's AdamW ops fuse.
  long plan_fwd_bwd = 0;
  const Routing routing = route_parameters(s.model, s.routing);
  const Plan plan = plan_step(s.model, routing, s.optimizer, Strategy::adamw, mesh_for_cluster(s.cluster), cost).plan;
  for (const Op& op : plan.ranks[0]) plan_fwd_bwd += op.phase != Phase::optimizer ? 1 : 0;
  CHECK(launches[0] == plan_fwd_bwd);
  REQUIRE(launches[0] > 10);
  REQUIRE(launches[1] >= 1);
  CHECK(launches[1] < static_cast<long>(plan.ranks[0].size()) - plan_fwd_bwd);

  const auto o = sim::simulate(p, s.cluster, {});
  // One-GPU collectives take ~launch overhead (< 7 us): the fwd/bwd run is the host's issue.
  CHECK(o.grads_ready_s == Approx(double(launches[0]) * issue_s).epsilon(0.02));
  CHECK(o.grads_ready_s >= double(launches[0]) * issue_s);
  // The optimizer run's host starts after the barrier: its launches come on top.
  CHECK(o.step_s - o.grads_ready_s >= double(launches[1]) * issue_s);
  // Host waiting counts as measured time (the calibration priced it; nothing else here is).
  CHECK(sim::source_shares(o.critical_seconds_by_source).at("measured") > 0);
  const CostModel no_key(device_profile("h100-sxm"), table(std::nullopt));
  const auto gpu_only = sim::simulate(program_of(s, Strategy::adamw, no_key, true), s.cluster, {});
  CHECK(sim::source_shares(gpu_only.critical_seconds_by_source).at("measured") == 0);
  CHECK(gpu_only.grads_ready_s < o.grads_ready_s);  // 5 us of GPU work a collective, 7 us of host

  sim::RunOptions options;
  options.check_memory = false;
  options.program.plan_as_is = true;
  const auto r = sim::run_strategy(s, Strategy::adamw, cost, options);
  CHECK(r.fwd_bwd_s == Approx(o.grads_ready_s).epsilon(1e-12));
  CHECK(r.step_s == Approx(o.step_s).epsilon(1e-12));
}

TEST_CASE("a fused AdamW launch waits for its tensor list: adamw_fused_issue_us per tensor", "[sim][host-issue]") {
  const Scenario s = small_scenario(1);
  const double issue_s = 7e-6, per_tensor_s = 3e-6;
  CalibrationTable t = table(issue_s * 1e6);
  const auto optimizer_run = [&](const CostModel& cost) {
    sim::RunOptions options;
    options.check_memory = false;
    options.program.plan_as_is = true;
    return sim::run_strategy(s, Strategy::adamw, cost, options).optimizer_s;
  };
  const CostModel plain(device_profile("h100-sxm"), t);
  t.adamw_fused_issue_us = per_tensor_s * 1e6;
  const CostModel with_key(device_profile("h100-sxm"), t);
  const sim::StepProgram p = program_of(s, Strategy::adamw, with_key, true);
  // One fused launch: its head carries every parameter's tensor, the rest none.
  const auto tensors = static_cast<double>(s.model.params.size());
  double host = 0;
  int heads = 0;
  for (const auto& op : p.ranks[0]) {
    if (op.category != "adamw") continue;
    host += op.host_s;
    heads += op.launches;
  }
  CHECK(heads == 1);
  CHECK(host == Approx(tensors * per_tensor_s).epsilon(1e-12));
  // The optimizer run starts its kernels that much later: the whole run grows by it.
  CHECK(optimizer_run(with_key) - optimizer_run(plain) == Approx(tensors * per_tensor_s).epsilon(1e-6));
}

TEST_CASE("steps back to back keep each step's fused-list host time on the host clock", "[sim][host-issue]") {
  const Scenario s = small_scenario(1);
  CalibrationTable t = table(7.0);
  t.adamw_fused_issue_us = 3.0;
  const CostModel cost(device_profile("h100-sxm"), t);
  const Routing routing = route_parameters(s.model, s.routing);
  const StepPlan sp = plan_step(s.model, routing, s.optimizer, Strategy::adamw, mesh_for_cluster(s.cluster), cost);
  sim::ProgramOptions o;
  o.steps = 2;
  const sim::StepProgram p = sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training, o);
  const auto& ops = p.ranks[0];
  REQUIRE(p.steps == 2);
  const std::size_t n = ops.size() / 2;
  long launches = 0;
  double host = 0;
  for (std::size_t i = 0; i < n; ++i) launches += ops[i].launches, host += ops[i].host_s;
  REQUIRE(host == Approx(3e-6 * static_cast<double>(s.model.params.size())).epsilon(1e-12));
  // Step 2's copy of every op is issued one whole step of host time later: launches and lists.
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(ops[n + i].issued_s - ops[i].issued_s == Approx(7e-6 * double(launches) + host).epsilon(1e-9));
  }
}

TEST_CASE("the one-GPU step overhead the calibration fits is the one the simulator reproduces its phase with",
          "[sim][host-issue][calibration]") {
  // One GPU as on the H100 leases: in-place all-gathers launch nothing (0.5 us), reduce-scatters
  // a kernel (4 us + 0.8 ns a byte); the host enqueues a launch every 4.5 us.
  const Scenario s = small_scenario(1);
  const double issue_s = 4.5e-6;
  CalibrationTable t = table(issue_s * 1e6);
  t.collectives = {CollectiveCurve{OpKind::all_gather, 1, 1, SizeCurve{{{4096, 5e-7}, {1073741824, 5e-7}}}},
                   CollectiveCurve{OpKind::reduce_scatter, 1, 1,
                                   SizeCurve{{{4096, 4e-6 + 4096 * 8e-10}, {1073741824, 4e-6 + 1073741824 * 8e-10}}}}};
  const Routing routing = route_parameters(s.model, s.routing);
  const Plan plan = plan_step(s.model, routing, s.optimizer, Strategy::adamw, mesh_for_cluster(s.cluster),
                              CostModel(device_profile("h100-sxm"))).plan;
  const CurvePricedCollectives priced = curve_priced_collectives(plan, 0, CostModel(device_profile("h100-sxm"), t));
  REQUIRE(priced.launch_seconds.size() == static_cast<std::size_t>(priced.launches));
  // The phase a probe would measure if each launch took 2.5 us beyond its curve.
  const double measured = host_paced_phase_seconds(priced.launch_seconds, issue_s, 2.5e-6);
  const double fitted = local_step_overhead_seconds(measured, priced, issue_s);
  CHECK(fitted == Approx(2.5e-6).epsilon(1e-9));
  const auto simulated_phase = [&](double overhead_s) {
    CalibrationTable with = t;
    with.local_collective_step_overhead_us = overhead_s * 1e6;
    sim::RunOptions options;
    options.check_memory = false;
    options.program.plan_as_is = true;  // as --validate runs the benchmark's Plan
    return sim::run_strategy(s, Strategy::adamw, CostModel(device_profile("h100-sxm"), with), options).fwd_bwd_s;
  };
  CHECK(simulated_phase(fitted) == Approx(measured).epsilon(1e-9));
  // Spread evenly over the launches, the in-place all-gathers' host wait is charged twice: the
  // simulator then over-prices the very phase it was fitted on.
  const double spread = collective_step_overhead_seconds(measured, priced, true);
  CHECK(spread > 1.2 * fitted);
  CHECK(simulated_phase(spread) > 1.002 * measured);
}
