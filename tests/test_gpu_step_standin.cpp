// The compute stand-in on 1 GPU (RankExecutor::run_step): a tiny Plan's whole step with the
// forward/backward weight GEMMs between its collectives keeps the compute stream busy, runs one
// stand-in item per unit and phase, and leaves the optimizer's results bit for bit as a run
// without it (the stand-in touches only its own scratch, never a Plan buffer).
#include <memory>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "core/cost/forward_backward_cost.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan_builders.hpp"
#include "core/plan/step_units.hpp"
#include "gpu_skip.hpp"
#include "harness/verify/distributed_checks.hpp"
#include "kernels/exec/compute_standin.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/exec/fill.hpp"
#include "kernels/exec/launch.hpp"
#include "kernels/exec/nccl_executor.hpp"

using namespace dmuon;

namespace {

struct Outcome {
  std::vector<std::vector<double>> masters, params;  // every region the rank updates, after 2 steps
  double compute_busy_seconds = 0;
  int standin_spans = 0;
  std::string error;
};

// Two steps of `plan` on rank `h` from fixed random data; with `cost`, through run_step.
Outcome two_steps(exec::RankHandle& h, const Plan& plan, const ModelSpec& model, const Routing& routing,
                  const OptimizerConfig& config, const ForwardBackwardCost* cost) {
  exec::ExecutorOptions eo;
  eo.timeout_seconds = 120;
  eo.compute.ns_impl = cuda::parse_ns_impl("standard", "ns_impl");
  exec::RankExecutor ex(h.comms(), plan, model, routing, config, eo, h.peer_failed());
  exec::fill_buffers(ex.buffers(), exec::kMasterKind, 7, 0.02, nullptr);
  exec::fill_buffers(ex.buffers(), static_cast<int>(BufferKind::param), 7, 0.02, nullptr);
  exec::fill_buffers(ex.buffers(), static_cast<int>(BufferKind::grad), 11, 1e-2, nullptr);
  DMUON_CUDA_CHECK(cudaDeviceSynchronize());
  Outcome out;
  std::unique_ptr<exec::ComputeStandin> standin;
  StepSchedule schedule;
  if (cost) {
    standin = std::make_unique<exec::ComputeStandin>(*cost, 3);
    schedule = step_schedule(plan, h.rank(), assign_step_units(plan, routing, *cost), 1);
  }
  for (long step = 1; step <= 2; ++step) {
    const exec::RunTiming t = standin ? ex.run_step(schedule, *standin, step, true) : ex.run(exec::kAllPhases, step, true);
    const StreamKind compute = StreamKind::compute;
    out.compute_busy_seconds = exec::busy_seconds(t.spans, &compute);
    out.standin_spans = 0;
    for (const auto& s : t.spans) out.standin_spans += s.standin_unit >= 0;
  }
  for (const Op& op : plan.ranks[static_cast<std::size_t>(h.rank())]) {
    if (op.kind != OpKind::muon_update && op.kind != OpKind::adamw) continue;
    for (const Region& r : op.regions) {
      out.masters.push_back(ex.buffers().download(exec::kMasterKind, r));
      out.params.push_back(ex.buffers().download(static_cast<int>(BufferKind::param), r));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the compute stand-in keeps the compute stream busy and the optimizer's results unchanged", "[gpu][standin]") {
  if (skip_without_gpu()) return;
  const ModelSpec model = verify::distributed_test_model();
  const Routing routing = route_parameters(model, {});
  TrainingSpec training;
  training.seq_len = 256;
  training.micro_batch = 2;
  const ForwardBackwardCost cost = forward_backward_cost(model, training, 989);
  const OptimizerConfig config = optimizer_preset("torch");  // a default OptimizerConfig has no NS schedule
  for (Strategy s : {Strategy::dedicated, Strategy::adamw, Strategy::ddp_redundant}) {
    const Plan plan = build_plan(s, model, routing, Mesh{1, 1}, std::vector<int>(routing.muon_matrices.size(), 0));
    Outcome plain, with;
    exec::LaunchOptions lo;
    lo.launcher = exec::Launcher::threads;
    lo.threads_world = 1;
    const int code = exec::launch_ranks(lo, nullptr, nullptr, [&](exec::RankHandle& h) {
      plain = two_steps(h, plan, model, routing, config, nullptr);
      with = two_steps(h, plan, model, routing, config, &cost);
    });
    INFO(to_string(s));
    REQUIRE(code == 0);
    CHECK(with.standin_spans == 2 * static_cast<int>(cost.units.size()));
    CHECK(plain.standin_spans == 0);
    CHECK(with.compute_busy_seconds > 0);
    CHECK(with.compute_busy_seconds > plain.compute_busy_seconds);
    REQUIRE(!with.masters.empty());
    CHECK(with.masters == plain.masters);  // bit for bit: doubles converted from the same fp32/bf16
    CHECK(with.params == plain.params);
  }
}
