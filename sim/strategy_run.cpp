#include "sim/strategy_run.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>
#include <numeric>
#include <thread>

#include "core/cost/executor_memory.hpp"
#include "core/error.hpp"
#include "core/plan/step_planner.hpp"
#include "sim/isolated_run.hpp"
#include "sim/measured_collectives.hpp"
#include "sim/memory_estimate.hpp"
#include "sim/topology.hpp"

#include <nlohmann/json.hpp>

namespace dmuon::sim {

CostModel scenario_cost_model(const Scenario& scenario, const std::string& calibration_file) {
  DeviceProfile device = device_profile(scenario.cluster.gpu, "cluster.gpu");
  device.memory_GiB = scenario.cluster.gpu_memory_GiB;
  const std::string file = calibration_file.empty() ? scenario.calibration_file : calibration_file;
  if (file.empty()) return CostModel(device);
  return CostModel(device, load_calibration(file));
}

namespace {

using nlohmann::json;

// Runs in the child process: planning there keeps the parent small (a forked parent that keeps
// allocating pays a copy-on-write fault per page) and the child exits without freeing the
// Plan's million small blocks (the Plan and program are deliberately leaked: the process ends
// right after).
json run_here(const Scenario& scenario, Strategy strategy, const CostModel& cost, const RunOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const Routing routing = route_parameters(scenario.model, scenario.routing);
  const Mesh mesh = mesh_for_cluster(scenario.cluster);
  StepPlanOptions plan_options = plan_options_for(scenario);
  plan_options.plan.fold_replicas = options.program.fold_replicas;  // --per-rank: neither folded
  // The Plan keeps its template replicas' lists only: the program is built from them
  // (executor_memory_per_gpu reads every rank's).
  plan_options.plan.keep_folded = options.program.fold_replicas && !options.executor_memory;
  if (options.check_memory) plan_options.memory_limit = StepPlanOptions::MemoryLimit{scenario.training, scenario.cluster.gpu_memory_GiB};
  plan_options.validate = false;  // below, beside the program's build
  auto* step = new StepPlan(plan_step(scenario.model, routing, scenario.optimizer, strategy, mesh, cost, plan_options));
  // Plan::validate only reads the Plan, as everything until the simulation does: it runs on the
  // machine's second core meanwhile (~9% of a 1,024-GPU owner-striped run), and its error, if
  // any, is the one reported (an invalid Plan can make the program's build fail first).
  std::exception_ptr invalid;
  std::jthread validation([&] {
    try {
      step->plan.validate(scenario.model, routing);
    } catch (...) {
      invalid = std::current_exception();
    }
  });
  const auto checked = [&] {
    validation.join();
    if (invalid) std::rethrow_exception(invalid);
  };
  json j;
  StepProgram* program = nullptr;
  try {
    const MemoryBreakdown memory = memory_per_gpu(step->plan, scenario.model, routing, scenario.training);
    if (options.check_memory) check_fits(strategy, memory, scenario.cluster.gpu_memory_GiB);
    ProgramOptions program_options = options.program;
    program_options.steps = scenario.sim_steps;  // the benchmark's Plan as is (plan_as_is) runs one
    program_options.keep_folded = true;          // the runner shares a replica's lists (StepProgram::replicas)
    program = new StepProgram(build_step_program(step->plan, scenario.model, routing, scenario.optimizer, cost,
                                                 scenario.training, program_options));
    apply_measured_collectives(*program, cost, static_cast<int>(scenario.cluster.gpus_per_node));
    j = {{"memory", {memory.master_bytes, memory.grad_bytes, memory.state_bytes, memory.transient_bytes, memory.activation_bytes}},
         {"grads_apart_from_activations", memory.grads_apart_from_activations},
         {"compute_source", program->compute_source},
         {"optimizer_source", program->optimizer_source + (program->launches_note.empty() ? "" : "; " + program->launches_note)},
         {"fwd_bwd_compute_s", program->fwd_bwd_compute_s}};
    if (options.executor_memory) {
      const MemoryBreakdown e = executor_memory_per_gpu(step->plan, scenario.model, routing);
      j["executor_memory"] = {e.master_bytes, e.grad_bytes, e.state_bytes, e.transient_bytes, e.activation_bytes};
    }
    if (step->assignment) j["assignment_imbalance"] = step->assignment->imbalance();
    if (!step->note.empty()) j["plan_note"] = step->note;
  } catch (...) {
    checked();  // the Plan's own error first
    throw;
  }
  checked();
  j["plan_wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  j["outcome"] = outcome_to_json(simulate_in_process(*program, scenario.cluster, options.sim));
  return j;
}

StrategyResult result_from(const json& j, Strategy strategy) {
  StrategyResult r;
  r.strategy = strategy;
  const auto mem = j.at("memory").get<std::vector<double>>();
  r.memory = {mem.at(0), mem.at(1), mem.at(2), mem.at(3), mem.at(4), j.at("grads_apart_from_activations").get<bool>()};
  if (j.contains("executor_memory")) {
    const auto e = j.at("executor_memory").get<std::vector<double>>();
    r.executor_memory = {e.at(0), e.at(1), e.at(2), e.at(3), e.at(4)};
  }
  if (j.contains("assignment_imbalance")) r.assignment_imbalance = j.at("assignment_imbalance").get<double>();
  r.plan_wall_s = j.at("plan_wall_s");
  r.compute_source = j.at("compute_source");
  r.optimizer_source = j.at("optimizer_source");
  if (j.contains("plan_note")) r.plan_note = j.at("plan_note");
  r.fwd_bwd_compute_s = j.at("fwd_bwd_compute_s");
  r.outcome = outcome_from_json(j.at("outcome").get<std::string>());
  const SimOutcome& o = r.outcome;
  r.step_s = o.step_s;
  r.fwd_bwd_s = o.grads_ready_s;
  r.optimizer_s = o.step_s - o.grads_ready_s;
  r.exposed_comm_s = std::max(0.0, o.step_s - o.critical_compute_busy_s);
  r.source_shares = source_shares(o.critical_seconds_by_source);
  const auto& opt = o.optimizer_compute_s;
  if (!opt.empty()) {
    const double mean = std::accumulate(opt.begin(), opt.end(), 0.0) / double(opt.size());
    const double most = *std::max_element(opt.begin(), opt.end());
    r.owner_imbalance = mean > 0 ? std::max(0.0, most / mean - 1) : 0;
  }
  return r;
}

// The checks up front: the cluster the simulator can hold (sim/topology.hpp: GPU count, links)
// and the memory estimate (sim/memory_estimate.hpp), before planning, which at thousands of
// GPUs alone takes minutes. Throws on either.
double checked_host_estimate(const Scenario& scenario, Strategy strategy, const RunOptions& options) {
  const Topology cluster(scenario.cluster);
  const SimMemoryEstimate e = estimate_sim_memory(scenario, strategy, route_parameters(scenario.model, scenario.routing),
                                                  options.program.fold_replicas);
  check_sim_memory(e, strategy, options.host_memory_limit_bytes, options.host_memory_limit_source);
  return e.bytes;
}

}  // namespace

std::map<std::string, double> source_shares(const std::map<std::string, double>& seconds_by_source) {
  std::map<std::string, double> shares{{"measured", 0}, {"interpolated", 0}, {"datasheet", 0}};
  double total = 0;
  for (const auto& [source, seconds] : seconds_by_source) total += seconds;
  if (!(total > 0)) return shares;
  for (const auto& [source, seconds] : seconds_by_source) shares[std::string(source_class(source))] += seconds / total;
  return shares;
}

StrategyResult run_strategy(const Scenario& scenario, Strategy strategy, const CostModel& cost,
                            const RunOptions& options) {
  checked_host_estimate(scenario, strategy, options);
  return result_from(json::parse(run_isolated([&] { return run_here(scenario, strategy, cost, options).dump(); })), strategy);
}

std::vector<StrategyOutcome> run_strategies(const Scenario& scenario, const std::vector<Strategy>& strategies,
                                            const CostModel& cost, const std::vector<RunOptions>& options, int parallel,
                                            const std::function<void(std::size_t)>& done) {
  if (options.size() != strategies.size()) throw Error("sim: one RunOptions per strategy expected");
  std::vector<StrategyOutcome> out(strategies.size());
  std::deque<std::pair<std::size_t, IsolatedRun>> running;
  std::vector<double> estimate(strategies.size(), 0);
  double in_flight = 0;  // estimated host bytes of the simulations running
  auto collect = [&] {
    auto& [i, run] = running.front();
    in_flight -= estimate[i];
    out[i].strategy = strategies[i];
    try {
      out[i].result = result_from(json::parse(run.wait()), strategies[i]);
    } catch (const Error& e) {
      out[i].error = e.what();
    }
    if (done) done(i);
    running.pop_front();
  };
  for (std::size_t i = 0; i < strategies.size(); ++i) {
    const double limit = options[i].host_memory_limit_bytes;
    try {
      estimate[i] = checked_host_estimate(scenario, strategies[i], options[i]);
    } catch (const Error& e) {
      out[i].strategy = strategies[i];
      out[i].error = e.what();
      if (done) done(i);
      continue;
    }
    while (!running.empty() && (static_cast<int>(running.size()) >= std::max(1, parallel) ||
                                (limit > 0 && in_flight + estimate[i] > limit))) {
      collect();
    }
    in_flight += estimate[i];
    running.emplace_back(i, IsolatedRun([&, i] { return run_here(scenario, strategies[i], cost, options[i]).dump(); }));
  }
  while (!running.empty()) collect();
  return out;
}

}  // namespace dmuon::sim
