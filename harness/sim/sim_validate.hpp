// --validate: the simulator's prediction beside a measured `dmuon-bench step` report
// (reports/step-<machine>.json, written by harness/dmuon_bench_step_report.cpp). The fields
// read (others are ignored):
//   {"machine": "2xh200", "gpu": "...", "scenario": "scenarios/qwen2.5-3b-2xh200.yaml",
//    "strategies": [{"strategy": "dedicated",
//                    "optimizer_step_seconds_median": 0.0123,   // optimizer step, slowest rank
//                    "fwd_bwd_comm_seconds_median": 0.0456}]}   // the Plan's fwd/bwd collectives alone
// The benchmark runs the Plan as it is (one launch per collective, no forward/backward
// compute), so the prediction simulates exactly that (ProgramOptions::plan_as_is).
//
// It also reads a report of harness/tools/fsdp2_step.py (recognised by "tool": "fsdp2_step.py"),
// a real PyTorch FSDP2 + AdamW step, against the scenario given with --scenario (required: the
// report names a model file, not a cluster). Fields read:
//   {"tool": "fsdp2_step.py", "mode": "fsdp2" | "compute-only", "model": "qwen2.5-1.5b",
//    "world": 2, "micro_batch": 2, "seq_len": 2048, "fwd_bwd_seconds_median": 0.31,
//    "peak_allocated_bytes": 3.1e10, "gpu": "...", "date": "..."}
// The scenario's training.micro_batch and seq_len are replaced by the report's (what ran); its
// model name must match "model" and, for fsdp2, its cluster's world size "world". The `adamw`
// strategy (FSDP2-like) is simulated in scenario mode (forward/backward compute and
// collectives, as FSDP2 overlaps them) and compared: fsdp2 mode "fwd+bwd (FSDP2 + AdamW)"
// with the simulated time until gradients are reduced, and peak memory (the simulator's memory
// model, bytes) with peak_allocated_bytes; compute-only mode "fwd+bwd compute (no FSDP)" with
// the pure forward+backward compute.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "core/io/scenario.hpp"

namespace dmuon::simcli {

struct ValidationRow {
  std::string strategy, quantity;
  double predicted = 0, measured = 0;
  std::string unit = "s";  // "s" or "bytes"
  double rel_error() const { return predicted / measured - 1; }
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
