// --validate: the simulator's prediction beside a measured `dmuon-bench step` report
// (reports/step-<machine>.json, written by harness/dmuon_bench_step_report.cpp). The fields
// read (others are ignored):
//   {"machine": "2xh200", "gpu": "...", "scenario": "scenarios/qwen2.5-3b-2xh200.yaml",
//    "strategies": [{"strategy": "dedicated",
//                    "optimizer_step_seconds_median": 0.0123,   // optimizer step, slowest rank
//                    "fwd_bwd_comm_seconds_median": 0.0456}]}   // the Plan's fwd/bwd collectives alone
// The benchmark runs the Plan as it is (one launch per collective, no forward/backward
// compute), so the prediction simulates exactly that (ProgramOptions::plan_as_is).
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "core/scenario.hpp"

namespace dmuon::simcli {

struct ValidationRow {
  std::string strategy, quantity;
  double predicted_s = 0, measured_s = 0;
  double rel_error() const { return predicted_s / measured_s - 1; }
};

struct Validation {
  std::string measured_file, machine, scenario_file, mode;
  std::vector<ValidationRow> rows;
  double max_abs_rel_error() const;
};

// `scenario_file` overrides the report's "scenario"; `calibration` is passed to the cost
// model. Throws dmuon::Error naming the file and field on a malformed report.
Validation validate(const std::string& measured_file, const std::string& scenario_file, const std::string& calibration,
                    SimMode mode);
void print_validation(std::ostream& out, const Validation& v);
void write_validation_json(const std::string& file, const Validation& v, const std::string& command);

}  // namespace dmuon::simcli
