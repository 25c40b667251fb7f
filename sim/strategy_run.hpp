// One strategy of a scenario, end to end: the planner's Plan (core/plan/step_planner), the memory
// check, the step program around it and its simulation, reduced to the figures dmuon-sim
// prints.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <vector>
#include <string>

#include "core/cost/calibration.hpp"
#include "core/cost/memory_model.hpp"
#include "core/io/scenario.hpp"
#include "sim/simulator.hpp"

namespace dmuon::sim {

struct StrategyResult {
  Strategy strategy = Strategy::adamw;
  MemoryBreakdown memory;
  // What the NCCL executor would allocate for the Plan (core/cost/executor_memory.hpp); only
  // with RunOptions::executor_memory, else zero.
  MemoryBreakdown executor_memory;
  double fwd_bwd_compute_s = 0;  // pure forward+backward compute per GPU
  double fwd_bwd_s = 0;          // until every gradient is reduced (collectives included)
  double exposed_comm_s = 0;     // step - compute-stream busy time, on the GPU that ends last
  double optimizer_s = 0;        // step - fwd_bwd_s
  double step_s = 0;
  double owner_imbalance = 0;    // (max - mean) / mean of optimizer compute over GPUs
  std::optional<double> assignment_imbalance;  // the owner assignment's own estimate
  std::string compute_source, optimizer_source;
  // Share of the predicted time by source class ("measured", "interpolated", "datasheet"; the
  // three always present, summing to 1): on the GPU that ends last, its ops' seconds by
  // SimOp::source (compute ops and collectives) over the sum of its ops' seconds.
  std::map<std::string, double> source_shares;
  SimOutcome outcome;
  double plan_wall_s = 0;        // host seconds planning took
  std::string plan_note;         // StepPlan::note: a planner decision (empty: none)
};

struct RunOptions {
  SimOptions sim;
  ProgramOptions program;
  bool check_memory = true;
  bool executor_memory = false;  // also price the executor's buffers (--validate on a step report)
  // Host memory the simulations may hold at once (sim/memory_estimate.hpp); 0: no limit. A
  // strategy whose estimate exceeds it is refused before it starts; run_strategies runs fewer
  // at a time while the estimates of those running together would exceed it.
  double host_memory_limit_bytes = 0;
  std::string host_memory_limit_source = "host memory limit";
};

// The cost model of a scenario: its GPU profile (cluster.gpu), with the calibration file when
// one is given (`calibration_file` overrides the scenario's `calibration:`).
CostModel scenario_cost_model(const Scenario& scenario, const std::string& calibration_file = "");

// Seconds by source -> shares of "measured", "interpolated", "datasheet" (all zero when the
// seconds sum to 0). A source outside these three counts as "datasheet" (core's source_class).
std::map<std::string, double> source_shares(const std::map<std::string, double>& seconds_by_source);

// Throws dmuon::Error: planning errors, "strategy S needs X GiB per GPU ..." when it does not
// fit cluster.gpu_memory_GiB, "... needs an estimated X GiB of host memory ..." when its
// simulation would not fit options.host_memory_limit_bytes, simulation errors.
StrategyResult run_strategy(const Scenario& scenario, Strategy strategy, const CostModel& cost,
                            const RunOptions& options);

// Several strategies, up to `parallel` simulations at a time (each in its own process). A
// strategy that fails keeps its error message instead of a result. `done(i)` is called as each
// finishes (for a progress bar).
struct StrategyOutcome {
  Strategy strategy = Strategy::adamw;
  std::optional<StrategyResult> result;
  std::string error;
};
std::vector<StrategyOutcome> run_strategies(const Scenario& scenario, const std::vector<Strategy>& strategies,
                                            const CostModel& cost, const std::vector<RunOptions>& options, int parallel,
                                            const std::function<void(std::size_t)>& done = {});

}  // namespace dmuon::sim
