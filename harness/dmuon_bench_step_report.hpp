// What `dmuon-bench step` measured, aggregated over ranks and iterations, and its writers:
// the JSON and Markdown reports and the Chrome (Perfetto) trace.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/median.hpp"
#include "core/plan/plan.hpp"
#include "harness/dmuon_bench_step_standin.hpp"
#include "kernels/exec/bench.hpp"

namespace dmuon::bench {

struct RankSummary {
  double compute_busy_seconds = 0, comm_busy_seconds = 0, idle_seconds = 0;  // optimizer step, medians
  double ns_busy_seconds = 0;
  double comm_phase_seconds = 0;  // forward+backward collectives, median
  double payload_bytes_forward = 0, payload_bytes_backward = 0, payload_bytes_optimizer = 0;
  double allocated_bytes = 0;
  int staged_ns_calls = 0;
};

struct StrategyResult {
  std::string strategy;
  double step_seconds = 0;             // optimizer step: median over iterations of the slowest rank
  double comm_phase_seconds = 0;       // forward+backward collectives: same statistic
  double step_comm_seconds = 0;        // communication inside the optimizer step (zero1/fsdp-gather)
  double comm_seconds_per_step = 0;    // comm phase + communication inside the step (median, slowest rank)
  double ns_imbalance_measured = 0;    // median over iterations of (max - mean) / mean of NS busy time
  double compute_imbalance_measured = 0;
  std::optional<double> ns_imbalance_predicted;  // the owner assignment's own figure
  std::vector<double> step_seconds_samples;
  std::vector<RankSummary> ranks;
  std::optional<StandinResult> standin;  // --compute-standin: the whole-step figures (the above are then 0)
  // Chrome trace events of the last measured iteration, per rank (already offset and labelled).
  std::vector<std::vector<exec::OpSpan>> trace_comm_phase, trace_optimizer, trace_whole_step;
  std::vector<std::vector<std::string>> op_labels;  // [rank][op] "kind 'label'"
};

struct StepReport {
  std::string machine, gpu, scenario, command, date;
  int world = 1;
  int iterations = 0, warmup = 0;
  std::string launcher;
  std::vector<StrategyResult> strategies;
};

// Per-rank measurements (index = rank) into one strategy's result.
StrategyResult summarize(const std::string& strategy, const Plan& plan, const std::vector<exec::RankMeasurement>& ranks);

void write_json(const StepReport& report, const std::string& path);
void write_markdown(const StepReport& report, const std::string& path);
void write_chrome_trace(const StepReport& report, const std::string& path);

}  // namespace dmuon::bench
