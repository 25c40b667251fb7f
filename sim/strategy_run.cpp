#include "sim/strategy_run.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/error.hpp"
#include "core/step_planner.hpp"

namespace dmuon::sim {

CostModel scenario_cost_model(const Scenario& scenario, const std::string& calibration_file) {
  DeviceProfile device = device_profile(scenario.cluster.gpu, "cluster.gpu");
  device.memory_GiB = scenario.cluster.gpu_memory_GiB;
  const std::string file = calibration_file.empty() ? scenario.calibration_file : calibration_file;
  if (file.empty()) return CostModel(device);
  return CostModel(device, load_calibration(file));
}

StrategyResult run_strategy(const Scenario& scenario, Strategy strategy, const CostModel& cost,
                            const RunOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const Routing routing = route_parameters(scenario.model, scenario.routing);
  const Mesh mesh = mesh_for_cluster(scenario.cluster);
  StepPlanOptions plan_options;
  const StepPlan step = plan_step(scenario.model, routing, scenario.optimizer, strategy, mesh, cost, plan_options);
  StrategyResult r;
  r.strategy = strategy;
  r.memory = memory_per_gpu(step.plan, scenario.model, routing, scenario.training);
  if (options.check_memory) check_fits(strategy, r.memory, scenario.cluster.gpu_memory_GiB);
  if (step.assignment) r.assignment_imbalance = step.assignment->imbalance();
  const StepProgram program = build_step_program(step.plan, scenario.model, routing, scenario.optimizer, cost,
                                                 scenario.training, options.program);
  r.plan_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.compute_source = program.compute_source;
  r.optimizer_source = program.optimizer_source;
  r.fwd_bwd_compute_s = program.fwd_bwd_compute_s;
  r.outcome = simulate(program, scenario.cluster, options.sim);
  const SimOutcome& o = r.outcome;
  r.step_s = o.step_s;
  r.fwd_bwd_s = o.grads_ready_s;
  r.optimizer_s = o.step_s - o.grads_ready_s;
  r.exposed_comm_s = std::max(0.0, o.step_s - o.critical_compute_busy_s);
  const auto& opt = o.optimizer_compute_s;
  if (!opt.empty()) {
    const double mean = std::accumulate(opt.begin(), opt.end(), 0.0) / double(opt.size());
    const double most = *std::max_element(opt.begin(), opt.end());
    r.owner_imbalance = mean > 0 ? std::max(0.0, most / mean - 1) : 0;
  }
  return r;
}

}  // namespace dmuon::sim
