// core/cost/step_overhead: a rank's forward/backward collectives priced from the calibration's
// curves, and the in-step overhead per NCCL call that `dmuon-bench calibrate` derives from them
// (calibration key collective_step_overhead_us).
#include <cmath>

#include "catch_compat.hpp"
#include "core/cost/device_profile.hpp"
#include "core/cost/plan_cost.hpp"
#include "core/cost/step_overhead.hpp"
#include "core/error.hpp"
#include "core/io/yaml_reader.hpp"
#include "core/io/scenario.hpp"
#include "core/model/routing.hpp"
#include "core/plan/step_planner.hpp"

using namespace dmuon;

namespace {

Scenario tiny() {
  return parse_scenario(R"(name: tiny
model: {name: tiny, transformer: {hidden: 256, layers: 2, heads: 4, ffn: 512, vocab: 1000}}
optimizer: {preset: torch}
cluster: {nodes: 1, gpus_per_node: 2, gpu: h200}
training: {seq_len: 128, micro_batch: 1}
)",
                        "tiny.yaml");
}

// Linear curves from 1 byte: `per_byte` seconds a byte at every size (a power law of exponent
// 1 between two points), so each call's price is known in closed form, small norms included.
CollectiveCurve linear(OpKind kind, int ranks, double per_byte) {
  return {kind, ranks, 1, SizeCurve{{{1.0, per_byte}, {1073741824.0, 1073741824.0 * per_byte}}}};
}

CalibrationTable table(std::vector<CollectiveCurve> curves) {
  const char* head = "gpu: h200\nsource: test\ngemm_tflops: 700\nhbm_GBps: 4000\nns: []\n";
  CalibrationTable t = parse_calibration(YamlValue::load_string(head, "t.yaml"));
  t.collectives = std::move(curves);
  return t;
}

StepPlan adamw_plan(const Scenario& s) {
  const CostModel plain(device_profile("h200"));
  return plan_step(s.model, route_parameters(s.model, s.routing), s.optimizer, Strategy::adamw, mesh_for_cluster(s.cluster),
                   plain);
}

}  // namespace

TEST_CASE("an adamw Plan's collectives: one all-gather and one reduce-scatter a parameter, each priced by its curve",
          "[cost][calibration]") {
  const Scenario s = tiny();
  const StepPlan sp = adamw_plan(s);
  const double ag = 1e-11, rs = 3e-11;  // seconds a byte
  const CostModel cost(device_profile("h200"),
                       table({linear(OpKind::all_gather, 2, ag), linear(OpKind::reduce_scatter, 2, rs)}));
  // Every parameter is gathered for the forward and its gradient reduce-scattered in the
  // backward, in bf16 (2 bytes an element): the closed form.
  double bytes = 0;
  for (const auto& p : s.model.params) bytes += 2.0 * double(p.numel());
  for (int rank : {0, 1}) {
    const CurvePricedCollectives priced = curve_priced_collectives(sp.plan, rank, cost);
    CHECK(priced.calls == 2 * static_cast<int>(s.model.params.size()));
    CHECK(priced.launches == priced.calls);  // one call a Plan collective here
    CHECK(priced.seconds == Approx(bytes * (ag + rs)).epsilon(1e-9));
    // The overhead spreads what the measured phase took beyond that over the calls.
    const double measured = priced.seconds + priced.calls * 6.5e-6;
    CHECK(collective_step_overhead_seconds(measured, priced) == Approx(6.5e-6).epsilon(1e-9));
    CHECK(collective_step_overhead_seconds(0.5 * priced.seconds, priced) < 0);  // faster than the curves: negative
    // Per launch (the one-GPU key): the same spread over the Plan's collectives.
    const CurvePricedCollectives fewer{priced.seconds, priced.calls, priced.calls / 2, {}};
    CHECK(collective_step_overhead_seconds(measured, fewer, true) == Approx(2 * 6.5e-6).epsilon(1e-9));
  }
}

TEST_CASE("collective step overhead refuses what it cannot price", "[cost][calibration]") {
  const Scenario s = tiny();
  const StepPlan sp = adamw_plan(s);
  const CostModel no_rs(device_profile("h200"), table({linear(OpKind::all_gather, 2, 1e-11)}));
  CHECK_THROWS_WITH(curve_priced_collectives(sp.plan, 0, no_rs),
                    Catch::Contains("rank 0 op") && Catch::Contains("no reduce_scatter curve over 2 GPUs of one node"));
  const CostModel one_gpu(device_profile("h200"),
                          table({linear(OpKind::all_gather, 1, 1e-11), linear(OpKind::reduce_scatter, 1, 1e-11)}));
  CHECK_THROWS_WITH(curve_priced_collectives(sp.plan, 0, one_gpu), Catch::Contains("no all_gather curve over 2 GPUs"));
  CHECK_THROWS_WITH(curve_priced_collectives(sp.plan, 2, no_rs), Catch::Contains("rank 2 is not a rank of the Plan (2 ranks)"));
  const CurvePricedCollectives priced{0.01, 10, 0, {}};
  CHECK_THROWS_WITH(collective_step_overhead_seconds(0, priced), Catch::Contains("positive finite time"));
  CHECK_THROWS_WITH(collective_step_overhead_seconds(std::nan(""), priced), Catch::Contains("positive finite time"));
  CHECK_THROWS_WITH(collective_step_overhead_seconds(0.02, CurvePricedCollectives{}),
                    Catch::Contains("no forward/backward collective"));
}

TEST_CASE("a host-paced one-GPU phase, and the overhead fitted through it", "[cost][calibration]") {
  const double us = 1e-6;
  // Launches enqueued every 4 us: an all-gather of 0.5 us, a reduce-scatter of 5 us, twice; each
  // 1 us more in the step. 1st: enqueued at 4, ends 5.5; 2nd: 8 -> 14; 3rd: waits for the GPU,
  // 14 -> 15.5; 4th: 16 -> 22.
  const std::vector<double> launches{0.5 * us, 5 * us, 0.5 * us, 5 * us};
  CHECK(host_paced_phase_seconds(launches, 4 * us, 1 * us) == Approx(22 * us).epsilon(1e-12));
  CHECK(host_paced_phase_seconds({}, 4 * us, 1 * us) == 0);
  CHECK(host_paced_phase_seconds(launches, 0, 0) == Approx(11 * us).epsilon(1e-12));  // no host: the GPU's sum
  const CurvePricedCollectives priced{11 * us, 4, 4, launches};
  CHECK(local_step_overhead_seconds(22 * us, priced, 4 * us) == Approx(1 * us).epsilon(1e-9));
  // Spread over every launch the same phase reads 2.75 us: the host's pace counted as GPU time.
  CHECK(collective_step_overhead_seconds(22 * us, priced, true) == Approx(2.75 * us).epsilon(1e-9));
  // GPU-bound throughout (no host cost): the even spread.
  CHECK(local_step_overhead_seconds(15 * us, priced, 0) == Approx(1 * us).epsilon(1e-9));
  // Host-bound or faster than the curves: nothing to add.
  CHECK(local_step_overhead_seconds(16.5 * us, CurvePricedCollectives{2 * us, 4, 4, {0.5 * us, 0.5 * us, 0.5 * us, 0.5 * us}},
                                    4 * us) == 0);
  CHECK(local_step_overhead_seconds(5 * us, priced, 0) == 0);
  CHECK_THROWS_WITH(local_step_overhead_seconds(22 * us, priced, -1 * us), Catch::Contains("issue cost must be"));
  CHECK_THROWS_WITH(local_step_overhead_seconds(0, priced, 4 * us), Catch::Contains("positive finite time"));
  CHECK_THROWS_WITH(host_paced_phase_seconds({-1 * us}, 4 * us, 0), Catch::Contains("launch 0 has negative seconds"));
}

TEST_CASE("one GPU: a grouped all-reduce's extra calls are priced as the grouped-call probe measured them",
          "[cost][calibration]") {
  Scenario s = tiny();
  s.cluster.gpus_per_node = 1;
  const CostModel plain(device_profile("h200"));
  const StepPlan sp = plan_step(s.model, route_parameters(s.model, s.routing), s.optimizer, Strategy::ddp_redundant,
                                mesh_for_cluster(s.cluster), plain);
  CalibrationTable t = table({linear(OpKind::all_reduce, 1, 1e-12)});
  t.local_grouped_calls = {{OpKind::all_reduce, {{1.0, 3.5e-6}}}};  // 3.5 us a call past the first, any size
  const CurvePricedCollectives priced = curve_priced_collectives(sp.plan, 0, CostModel(device_profile("h200"), t));
  std::size_t launch = 0, grouped = 0;
  for (const Op& op : sp.plan.ranks[0]) {
    if (!is_collective(op.kind) || op.phase == Phase::optimizer) continue;
    const double curve = 1e-12 * collective_payload_bytes(op, 0, sp.plan.bytes_per_element);
    REQUIRE(launch < priced.launch_seconds.size());
    CHECK(priced.launch_seconds[launch++] == Approx(curve + (nccl_calls(op) - 1) * 3.5e-6).epsilon(1e-9));
    if (nccl_calls(op) > 1) ++grouped;
  }
  CHECK(launch == priced.launch_seconds.size());
  CHECK(grouped > 0);  // the Plan groups a block's gradients: the case this prices
}
