// `dmuon-bench step --compute-standin`: what the whole-step runs measured (forward and backward
// with the model's weight GEMMs on the compute stream, then the optimizer step), aggregated over
// ranks and iterations, and its report sections.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plan/plan.hpp"
#include "kernels/exec/bench.hpp"

namespace dmuon::bench {

struct StandinRank {
  double step_seconds = 0, compute_busy_seconds = 0, standin_seconds = 0, exposed_comm_seconds = 0;  // medians
};

struct StandinResult {
  // Per iteration: the slowest rank's whole step; the busiest rank's compute stream (stand-in
  // GEMMs and the optimizer's compute ops); its stand-in GEMMs alone; exposed communication =
  // that step minus that compute busy time. Each a median over iterations.
  double step_seconds = 0, compute_busy_seconds = 0, standin_seconds = 0, exposed_comm_seconds = 0;
  double standin_flops = 0;  // per step, the largest rank's
  std::vector<double> step_seconds_samples;
  std::vector<StandinRank> ranks;
};

StandinResult summarize_standin(const std::vector<exec::RankMeasurement>& ranks);

// The stand-in fields of one strategy's JSON object (names carry their units).
void add_standin_json(nlohmann::json& strategy, const StandinResult& s);

struct StrategyResult;
// The Markdown body of a stand-in report: the per-strategy table, the per-rank table and notes.
void write_standin_markdown(std::ostream& f, const std::vector<StrategyResult>& strategies);

// A trace name for a stand-in span ("forward unit 3 (stand-in GEMMs)").
std::string standin_span_name(const exec::OpSpan& span);

}  // namespace dmuon::bench
