// Compute beside NCCL (calibration key compute_slowdown_beside_nccl): while a collective of
// several GPUs is in flight on a rank, from the moment its stream reaches it (waiting for a late
// peer included), that rank's compute runs 1 + slowdown times slower; checked against schedules
// worked out by hand. Without the key compute ignores collectives.
#include <algorithm>
#include <optional>
#include <vector>

#include "catch_compat.hpp"
#include "core/io/scenario.hpp"
#include "core/plan/step_planner.hpp"
#include "sim/simulator.hpp"
#include "sim/step_program.hpp"
#include "sim_test_support.hpp"

using namespace dmuon;
using namespace dmuon::simtest;

namespace {

// Each rank: a compute op of compute_s[r] on the compute stream and one collective of `members`
// (5 ms measured) on the gather stream; rank r's collective waits for its compute when
// after_compute[r].
sim::StepProgram program(const std::vector<double>& compute_s, const std::vector<int>& members,
                         const std::vector<bool>& after_compute, std::optional<double> slowdown) {
  sim::StepProgram p;
  p.ranks.resize(compute_s.size());
  sim::SimCollective c;
  c.call.kind = OpKind::all_gather;
  c.call.members = members;
  c.call.bytes = 1 << 20;
  c.calls = 1;
  c.group = "test";
  if (members.size() > 1) {
    c.measured_seconds = 0.005;
  } else {
    c.local_seconds = 0.005;
  }
  p.collectives.push_back(c);
  for (std::size_t r = 0; r < compute_s.size(); ++r) {
    sim::SimOp compute;
    compute.stream = sim::kComputeStream;
    compute.category = "newton_schulz";
    compute.seconds = compute_s[r];
    p.ranks[r].push_back(compute);
    if (std::find(members.begin(), members.end(), int(r)) == members.end()) continue;
    sim::SimOp coll;
    coll.stream = sim::kGatherStream;
    coll.category = "all_gather";
    coll.collective = 0;
    if (after_compute[r]) coll.deps = {0};
    p.ranks[r].push_back(coll);
  }
  p.compute_slowdown_beside_nccl = slowdown;
  return p;
}

double step_seconds(const sim::StepProgram& p, int gpus) { return sim::simulate(p, cluster(1, gpus), {}).step_s; }

// A calibration with nothing but its ceilings, for the two tests below to add one key to.
CalibrationTable tiny_calibration() {
  CalibrationTable t;
  t.gpu = "h100-sxm", t.gemm_tflops = 750, t.hbm_GBps = 3000;
  return t;
}

// The zero1-a2a step program of a two-GPU toy model, priced with `t`.
sim::StepProgram tiny_zero1_program(const CalibrationTable& t) {
  const Scenario s = parse_scenario(R"(name: tiny
model: {name: tiny, transformer: {hidden: 256, layers: 2, heads: 4, ffn: 512, vocab: 1000}}
optimizer: {preset: torch}
cluster: {nodes: 1, gpus_per_node: 2, gpu: h100-sxm, nvlink: {bw_GBps: 450, latency_us: 3}}
training: {seq_len: 128, micro_batch: 1, fwd_bwd_seconds: 0.01}
)",
                                    "tiny.yaml");
    const CostModel cost(device_profile("h100-sxm", "test"), t);
    const Routing routing = route_parameters(s.model, s.routing);
    const StepPlan sp = plan_step(s.model, routing, s.optimizer, Strategy::zero1_a2a, mesh_for_cluster(s.cluster), cost);
    return sim::build_step_program(sp.plan, s.model, routing, s.optimizer, cost, s.training, {});
}

}  // namespace

TEST_CASE("compute slows by the measured factor while a collective of several GPUs is in flight", "[sim][contention]") {
  // Both ranks: 10 ms of compute beside a 5 ms collective from t = 0. Slowdown 0.25: the first
  // 5 ms do 4 ms of the work, the other 6 ms run alone: 11 ms.
  CHECK(step_seconds(program({0.010, 0.010}, {0, 1}, {false, false}, 0.25), 2) == Approx(0.011).epsilon(1e-9));
  // Without the key, or with 0: 10 ms.
  CHECK(step_seconds(program({0.010, 0.010}, {0, 1}, {false, false}, std::nullopt), 2) == Approx(0.010).epsilon(1e-12));
  CHECK(step_seconds(program({0.010, 0.010}, {0, 1}, {false, false}, 0.0), 2) == Approx(0.010).epsilon(1e-9));
  // Compute shorter than the collective: 2 ms of work at 1/1.25 takes 2.5 ms; the step ends
  // with the collective at 5 ms.
  const auto short_compute = sim::simulate(program({0.002, 0.002}, {0, 1}, {false, false}, 0.25), cluster(1, 2), {});
  CHECK(short_compute.step_s == Approx(0.005).epsilon(1e-9));
  // The compute's busy time is what it took, slowdown included (else exposed communication would
  // hold it), the extra second of it counted as measured.
  const auto o = sim::simulate(program({0.010, 0.010}, {0, 1}, {false, false}, 0.25), cluster(1, 2), {});
  CHECK(o.critical_compute_busy_s == Approx(0.011).epsilon(1e-9));
  CHECK(o.critical_seconds_by_source.at("measured") == Approx(0.001).epsilon(1e-9));
}

TEST_CASE("a collective that enters flight in the middle of a compute op slows only the rest of it", "[sim][contention]") {
  // Rank 0: 10 ms of compute; a one-GPU copy of 3 ms on the reduce stream, then the two-GPU
  // collective (5 ms) after it, in flight 3-8 ms. The compute: 3 ms of work alone, 4 in the
  // 5 ms beside the collective (slowdown 0.25), the last 3 alone: it ends at 11 ms.
  sim::StepProgram p = program({0.010, 0.0}, {0, 1}, {false, false}, 0.25);
  sim::SimCollective local;
  local.call.kind = OpKind::all_gather;
  local.call.members = {0};
  local.call.bytes = 1024;
  local.calls = 1;
  local.local_seconds = 0.003;
  local.group = "local";
  p.collectives.push_back(local);
  sim::SimOp copy;
  copy.stream = sim::kReduceStream;
  copy.category = "all_gather";
  copy.collective = 1;
  p.ranks[0].push_back(copy);  // op 2 of rank 0
  p.ranks[0][1].deps = {2};     // the two-GPU collective waits for the copy
  CHECK(step_seconds(p, 2) == Approx(0.011).epsilon(1e-9));
}

TEST_CASE("a collective waiting for its peer holds the load; one GPU's collective none", "[sim][contention]") {
  // Rank 1 reaches the collective after its 3 ms of compute (not slowed: nothing is in flight on
  // rank 1 before). Rank 0's collective is in flight from 0, waits until 3 ms and moves for 5 ms:
  // rank 0's 10 ms of compute runs at 0.8 for 8 ms (6.4 ms of work) and 3.6 ms alone: 11.6 ms.
  CHECK(step_seconds(program({0.010, 0.003}, {0, 1}, {false, true}, 0.25), 2) == Approx(0.0116).epsilon(1e-9));
  // A one-GPU collective is a local copy, no NCCL kernel beside the compute: 10 ms.
  CHECK(step_seconds(program({0.010}, {0}, {false}, 0.25), 1) == Approx(0.010).epsilon(1e-9));
}

TEST_CASE("a step program carries the calibration's slowdown and says so", "[sim][contention]") {
  const auto program = [](std::optional<double> slowdown) {
    CalibrationTable t = tiny_calibration();
    t.compute_slowdown_beside_nccl = slowdown;
    return tiny_zero1_program(t);
  };
  const auto with = program(0.25);
  REQUIRE(with.compute_slowdown_beside_nccl.has_value());
  CHECK(*with.compute_slowdown_beside_nccl == 0.25);
  CHECK(with.optimizer_source.find("compute x 1.25 beside a collective of several GPUs (measured)") != std::string::npos);
  const auto without = program(std::nullopt);
  CHECK_FALSE(without.compute_slowdown_beside_nccl.has_value());
  CHECK(without.optimizer_source.find("beside a collective") == std::string::npos);
}

TEST_CASE("a collective slows by the measured factor for the part of it its members spend computing", "[sim][contention]") {
  const auto with_stretch = [](sim::StepProgram p, std::optional<double> stretch) {
    p.collective_slowdown_beside_compute = stretch;
    return p;
  };
  // Both ranks: 3 ms of compute beside a 5 ms collective from t = 0. Stretch 1.0: the 3 ms of the
  // transfer beside compute cost 3 ms more, the collective ends at 8 ms.
  const auto beside = program({0.003, 0.003}, {0, 1}, {false, false}, std::nullopt);
  CHECK(step_seconds(with_stretch(beside, 1.0), 2) == Approx(0.008).epsilon(1e-9));
  CHECK(step_seconds(with_stretch(beside, 0.5), 2) == Approx(0.0065).epsilon(1e-9));
  // Without the key, or with 0: 5 ms.
  CHECK(step_seconds(with_stretch(beside, std::nullopt), 2) == Approx(0.005).epsilon(1e-9));
  CHECK(step_seconds(with_stretch(beside, 0.0), 2) == Approx(0.005).epsilon(1e-9));
  // Both directions: the compute runs at 1 / 1.25 beside the collective and takes 3.75 ms, all of
  // it beside the transfer: 5 + 3.75 ms.
  CHECK(step_seconds(with_stretch(program({0.003, 0.003}, {0, 1}, {false, false}, 0.25), 1.0), 2) ==
        Approx(0.00875).epsilon(1e-9));
  // The busiest member counts: rank 1 computes 1 ms, rank 0 3 ms: 5 + 3 ms.
  CHECK(step_seconds(with_stretch(program({0.003, 0.001}, {0, 1}, {false, false}, std::nullopt), 1.0), 2) ==
        Approx(0.008).epsilon(1e-9));
  // A collective after its members' compute runs alone: 3 + 5 ms.
  CHECK(step_seconds(with_stretch(program({0.003, 0.003}, {0, 1}, {true, true}, std::nullopt), 1.0), 2) ==
        Approx(0.008).epsilon(1e-9));
  CHECK(step_seconds(with_stretch(program({0.003, 0.003}, {0, 1}, {true, true}, std::nullopt), 3.0), 2) ==
        Approx(0.008).epsilon(1e-9));
  // A one-GPU collective is a local copy, not an NCCL kernel: 5 ms whatever the stretch.
  CHECK(step_seconds(with_stretch(program({0.003}, {0}, {false}, std::nullopt), 1.0), 1) == Approx(0.005).epsilon(1e-9));
}

TEST_CASE("a step program carries the calibration's NCCL slowdown beside compute and says so", "[sim][contention]") {
  const auto program = [](std::optional<double> stretch) {
    CalibrationTable t = tiny_calibration();
    t.collective_slowdown_beside_compute = stretch;
    return tiny_zero1_program(t);
  };
  const auto with = program(0.8);
  REQUIRE(with.collective_slowdown_beside_compute.has_value());
  CHECK(*with.collective_slowdown_beside_compute == 0.8);
  CHECK(with.optimizer_source.find("collectives x 1.8 beside compute (measured)") != std::string::npos);
  const auto without = program(std::nullopt);
  CHECK_FALSE(without.collective_slowdown_beside_compute.has_value());
  CHECK(without.optimizer_source.find("beside compute") == std::string::npos);
}

TEST_CASE("a unit the host paces: only its GPU work is slowed by NCCL or slows it", "[sim][contention]") {
  const auto with_wait = [](sim::StepProgram p, double wait_s) {
    for (auto& ops : p.ranks) ops[0].host_wait_s = wait_s;
    return p;
  };
  // 10 ms paced, 4 ms of it GPU work, beside a 5 ms collective (compute slowdown 0.25): the GPU
  // work takes 5 ms at 1 / 1.25, inside the host's 10 ms: 10 ms (11 ms without the wait, first case).
  CHECK(step_seconds(with_wait(program({0.010, 0.010}, {0, 1}, {false, false}, 0.25), 0.006), 2) ==
        Approx(0.010).epsilon(1e-9));
  // 5 ms paced, 4 ms GPU work, slowdown 0.5: 3.33 ms of work in the collective's 5 ms, 0.67 ms
  // alone after it: 5.67 ms, past the host's 5.
  CHECK(step_seconds(with_wait(program({0.005, 0.005}, {0, 1}, {false, false}, 0.5), 0.001), 2) ==
        Approx(0.005 + 0.002 / 3).epsilon(1e-9));
  // NCCL beside compute (stretch 1.0) counts only the 3 ms of GPU work of a 5 ms paced unit: the
  // 5 ms collective ends at 8 ms (at 10 ms if the wait counted).
  auto p = with_wait(program({0.005, 0.005}, {0, 1}, {false, false}, std::nullopt), 0.002);
  p.collective_slowdown_beside_compute = 1.0;
  CHECK(step_seconds(p, 2) == Approx(0.008).epsilon(1e-9));
}
