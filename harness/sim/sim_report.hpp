// dmuon-sim's outputs: the per-strategy table, the JSON and CSV files, the sweep's scaling
// table and the validation against a measured `dmuon-bench step` report.
#pragma once
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/io/scenario.hpp"
#include "sim/strategy_run.hpp"

namespace dmuon::simcli {

// One strategy's outcome: a result, or the reason it has none (e.g. it does not fit).
struct StrategyRow {
  Strategy strategy = Strategy::adamw;
  std::optional<sim::StrategyResult> result;
  std::string error;
};

struct ScenarioRun {
  Scenario scenario;
  std::string label;  // the sweep value, or empty
  std::vector<StrategyRow> rows;
};

// Runs the strategies, `parallel` at a time, each with its options (strategy errors are kept
// in their row); `done(i)` reports progress.
ScenarioRun run_scenario(const Scenario& scenario, const std::vector<Strategy>& strategies, const CostModel& cost,
                         const std::vector<sim::RunOptions>& options, int parallel, const std::string& label,
                         const std::function<void(std::size_t)>& done = {});

void print_table(std::ostream& out, const ScenarioRun& run);
void print_scaling_table(std::ostream& out, const std::string& key, const std::vector<ScenarioRun>& runs);

// Throws dmuon::Error naming the file when it cannot be written.
void write_json(const std::string& file, const std::vector<ScenarioRun>& runs, const std::string& command);
void write_csv(const std::string& file, const std::vector<ScenarioRun>& runs);

// "out/trace.json" + "dedicated" -> "out/trace-dedicated.json".
std::string with_suffix(const std::string& file, const std::string& suffix);

}  // namespace dmuon::simcli
