#include "harness/sim/sim_validate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/cost/memory_model.hpp"
#include "core/error.hpp"
#include "core/io/file_read.hpp"
#include "core/io/provenance.hpp"
#include "harness/sim/sim_report.hpp"
#include "sim/strategy_run.hpp"

namespace dmuon::simcli {
namespace {

nlohmann::json read_json(const std::string& file) {
  std::string text;
  try {
    text = read_regular_file(file);
  } catch (const Error& e) {
    throw Error(std::string("--validate: ") + e.what());
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("--validate: " + file + ": not valid JSON: " + e.what());
  }
}

double positive_number(const nlohmann::json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_number()) throw Error(where + "." + key + ": missing or not a number");
  const double v = j.at(key).get<double>();
  if (!(v >= 0) || !std::isfinite(v)) throw Error(where + "." + key + ": must be a finite number >= 0");
  return v;
}

std::int64_t positive_int(const nlohmann::json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_number_integer() || j.at(key).get<std::int64_t>() <= 0) {
    throw Error(where + "." + key + ": missing or not an integer > 0");
  }
  return j.at(key).get<std::int64_t>();
}

std::string string_field(const nlohmann::json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_string()) throw Error(where + "." + key + ": missing or not a string");
  return j.at(key).get<std::string>();
}

// The largest "allocated_bytes" over a strategy's "ranks" (0 when the report has none: older
// reports, or a run that did not record it).
double most_allocated(const nlohmann::json& s, const std::string& where) {
  if (!s.contains("ranks") || !s.at("ranks").is_array()) return 0;
  double most = 0;
  int k = 0;
  for (const auto& rank : s.at("ranks")) {
    const std::string at = where + ".ranks[" + std::to_string(k++) + "]";
    if (rank.contains("allocated_bytes")) most = std::max(most, positive_number(rank, "allocated_bytes", at));
  }
  return most;
}

// A report of harness/tools/fsdp2_step.py against `scenario_file` (see sim_validate.hpp).
Validation validate_fsdp2(const nlohmann::json& j, const std::string& measured_file, const std::string& scenario_file,
                          const std::string& calibration, SimMode mode) {
  const std::string& where = measured_file;
  if (scenario_file.empty()) throw Error("--scenario: required with an fsdp2_step.py report (" + measured_file + ")");
  const std::string run_mode = string_field(j, "mode", where);
  if (run_mode != "fsdp2" && run_mode != "compute-only") {
    throw Error(where + ".mode: expected fsdp2 or compute-only, got '" + run_mode + "'");
  }
  const bool fsdp2 = run_mode == "fsdp2";
  const std::string model = string_field(j, "model", where);
  const double fwd_bwd = positive_number(j, "fwd_bwd_seconds_median", where);
  if (!(fwd_bwd > 0)) throw Error(where + ".fwd_bwd_seconds_median: must be > 0");
  const double peak = fsdp2 ? positive_number(j, "peak_allocated_bytes", where) : 0;
  if (fsdp2 && !(peak > 0)) throw Error(where + ".peak_allocated_bytes: must be > 0");
  Validation v;
  v.measured_file = measured_file;
  v.machine = j.value("gpu", "") + (j.contains("world") ? " x" + j.at("world").dump() : "");
  v.scenario_file = scenario_file;
  v.mode = std::string(to_string(mode));
  Scenario scenario = load_scenario(scenario_file);
  scenario.sim_mode = mode;
  scenario.training.micro_batch = positive_int(j, "micro_batch", where);
  scenario.training.seq_len = positive_int(j, "seq_len", where);
  scenario.training.fsdp2_copies = fsdp2;  // it ran under PyTorch FSDP2: price its copies and casts
  if (scenario.model.name != model) {
    throw Error(where + ".model: '" + model + "' but scenario " + scenario_file + " has model '" + scenario.model.name + "'");
  }
  // A run of a cut-down model (fsdp2_step.py --num-layers: the host-floor probe) is not this model.
  if (j.contains("num_layers") && !scenario.model.transformers.empty()) {
    std::int64_t layers = 0;
    for (const auto& t : scenario.model.transformers) layers += t.config.layers;
    if (positive_int(j, "num_layers", where) != layers) {
      throw Error(where + ".num_layers: " + j.at("num_layers").dump() + " decoder layers but scenario " + scenario_file +
                  "'s model has " + std::to_string(layers) + " (a --num-layers probe, not a step of this model)");
    }
  }
  if (fsdp2 && positive_int(j, "world", where) != scenario.cluster.world_size()) {
    throw Error(where + ".world: " + j.at("world").dump() + " GPUs but scenario " + scenario_file + " has " +
                std::to_string(scenario.cluster.world_size()));
  }
  const CostModel cost = sim::scenario_cost_model(scenario, calibration);
  sim::RunOptions options;
  options.sim.mode = mode;
  options.check_memory = false;  // it ran: memory is compared, not checked
  const sim::StrategyResult r = sim::run_strategy(scenario, Strategy::adamw, cost, options);
  const std::string name(to_string(Strategy::adamw));
  if (fsdp2) {
    v.rows.push_back({name, "fwd+bwd (FSDP2 + AdamW)", r.fwd_bwd_s, fwd_bwd, "s", ""});
    v.rows.push_back({name, "peak allocated (with act.)", r.memory.total_bytes(), peak, "bytes",
                      "memory_per_gpu: " + describe(r.memory)});
  } else {
    v.rows.push_back({name, "fwd+bwd compute (no FSDP)", r.fwd_bwd_compute_s, fwd_bwd, "s", ""});
  }
  return v;
}

}  // namespace

double Validation::max_abs_rel_error() const {
  double m = 0;
  for (const auto& r : rows) {
    if (!r.is_memory()) m = std::max(m, std::abs(r.rel_error()));
  }
  return m;
}

double Validation::max_abs_rel_error_memory() const {
  double m = 0;
  for (const auto& r : rows) {
    if (r.is_memory()) m = std::max(m, std::abs(r.rel_error()));
  }
  return m;
}

Validation validate(const std::string& measured_file, const std::string& scenario_file, const std::string& calibration,
                    SimMode mode) {
  const nlohmann::json j = read_json(measured_file);
  if (j.is_object() && j.contains("tool") && j.at("tool") == "fsdp2_step.py") {
    return validate_fsdp2(j, measured_file, scenario_file, calibration, mode);
  }
  Validation v;
  v.measured_file = measured_file;
  v.machine = j.value("machine", "");
  v.scenario_file = scenario_file;
  if (v.scenario_file.empty()) {
    if (!j.contains("scenario") || !j.at("scenario").is_string()) {
      throw Error(measured_file + ": scenario: missing (or pass --scenario)");
    }
    v.scenario_file = j.at("scenario").get<std::string>();
  }
  if (!j.contains("strategies") || !j.at("strategies").is_array()) throw Error(measured_file + ": strategies: missing or not a list");
  Scenario scenario = load_scenario(v.scenario_file);
  scenario.sim_mode = mode;
  v.mode = std::string(to_string(mode));
  const CostModel cost = sim::scenario_cost_model(scenario, calibration);
  sim::RunOptions options;
  options.sim.mode = mode;
  options.program.plan_as_is = true;
  options.check_memory = false;  // the benchmark ran it: memory is compared, not checked
  options.executor_memory = true;
  std::vector<ValidationRow> memory_rows;  // after every time row: the time rows keep their order
  int index = 0;
  for (const auto& s : j.at("strategies")) {
    const std::string where = measured_file + ": strategies[" + std::to_string(index++) + "]";
    if (!s.contains("strategy") || !s.at("strategy").is_string()) throw Error(where + ".strategy: missing");
    const Strategy strategy = parse_strategy(s.at("strategy").get<std::string>(), where + ".strategy");
    const double opt = positive_number(s, "optimizer_step_seconds_median", where);
    const double comm = s.contains("fwd_bwd_comm_seconds_median") ? positive_number(s, "fwd_bwd_comm_seconds_median", where) : 0;
    const sim::StrategyResult r = sim::run_strategy(scenario, strategy, cost, options);
    const std::string name(to_string(strategy));
    if (opt > 0) v.rows.push_back({name, "optimizer step", r.optimizer_s, opt, "s", ""});
    if (comm > 0) v.rows.push_back({name, "fwd/bwd collectives", r.fwd_bwd_s, comm, "s", ""});
    const double allocated = most_allocated(s, where);
    if (allocated > 0) {
      MemoryBreakdown training = r.memory;
      training.activation_bytes = 0;  // the executor runs no model compute
      char training_GiB[64];
      std::snprintf(training_GiB, sizeof training_GiB, "%.2f GiB", training.total_GiB());
      memory_rows.push_back({name, "executor allocated (no act)", r.executor_memory.total_bytes(), allocated, "bytes",
                             "executor layout (transient = bf16 param copy + NS buffers): " + describe(r.executor_memory) +
                                 "; training layout without activations: " + training_GiB});
    }
  }
  v.rows.insert(v.rows.end(), memory_rows.begin(), memory_rows.end());
  if (v.rows.empty()) throw Error(measured_file + ": no strategy has a measured time > 0");
  return v;
}

void print_validation(std::ostream& out, const Validation& v) {
  out << "dmuon-sim --validate " << v.measured_file << " (machine " << v.machine << ", scenario " << v.scenario_file
      << ", mode " << v.mode << ")\n";
  out << std::left << std::setw(15) << "strategy" << std::setw(29) << "quantity" << std::right << std::setw(12)
      << "predicted" << std::setw(12) << "measured" << std::setw(6) << "unit" << std::setw(10) << "error" << "\n";
  for (const auto& r : v.rows) {
    // Seconds print as ms, bytes as GiB: the figures a reader compares.
    const bool bytes = r.unit == "bytes";
    const double scale = bytes ? 1.0 / (1 << 30) : 1e3;
    std::ostringstream e;
    e << std::showpos << std::fixed << std::setprecision(1) << r.rel_error() * 100 << "%";
    out << std::left << std::setw(15) << r.strategy << std::setw(29) << r.quantity << std::right << std::fixed
        << std::setprecision(3) << std::setw(12) << r.predicted * scale << std::setw(12) << r.measured * scale
        << std::setw(6) << (bytes ? "GiB" : "ms") << std::setw(10) << e.str() << "\n";
  }
  for (const auto& r : v.rows) {
    if (!r.note.empty()) out << "  " << r.strategy << " " << r.quantity << " predicted: " << r.note << "\n";
  }
  out << "max_abs_rel_error " << std::fixed << std::setprecision(4) << v.max_abs_rel_error() << " (time rows)\n";
  if (std::any_of(v.rows.begin(), v.rows.end(), [](const ValidationRow& r) { return r.is_memory(); })) {
    out << "max_abs_rel_error_memory " << std::fixed << std::setprecision(4) << v.max_abs_rel_error_memory() << "\n";
  }
}

void write_validation_json(const std::string& file, const Validation& v, const std::string& command) {
  nlohmann::json j = provenance_json(command, utc_now());
  j.update({{"measured_file", v.measured_file}, {"machine", v.machine}, {"scenario", v.scenario_file},
            {"mode", v.mode}, {"max_abs_rel_error", v.max_abs_rel_error()},
            {"max_abs_rel_error_memory", v.max_abs_rel_error_memory()}});
  j["rows"] = nlohmann::json::array();
  for (const auto& r : v.rows) {
    nlohmann::json row = {{"strategy", r.strategy}, {"quantity", r.quantity}, {"unit", r.unit},
                          {"predicted", r.predicted}, {"measured", r.measured}, {"rel_error", r.rel_error()}};
    if (r.unit == "s") row.update({{"predicted_seconds", r.predicted}, {"measured_seconds", r.measured}});
    if (r.is_memory()) row.update({{"predicted_GiB", r.predicted / kGiB}, {"measured_GiB", r.measured / kGiB}});
    if (!r.note.empty()) row["predicted_breakdown"] = r.note;
    j["rows"].push_back(std::move(row));
  }
  std::ofstream out(file);
  if (!out) throw Error("--json: cannot write '" + file + "'");
  out << j.dump(2) << "\n";
}

}  // namespace dmuon::simcli
