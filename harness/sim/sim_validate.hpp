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
//
// Memory rows (unit "bytes" in --json, as before, with predicted_GiB / measured_GiB beside;
// printed in GiB) follow the time rows and are kept out of max_abs_rel_error, which stays the
// time figure (max_abs_rel_error_memory is theirs):
//   - step report, per strategy with a per-rank "allocated_bytes": "executor allocated (no act)",
//     the largest rank's executor buffers (kernels/exec/buffers.cpp, all it counts) against
//     core/cost/executor_memory.hpp's layout of the same Plan. The training layout of
//     memory_per_gpu without activations is printed beside it as a note, not compared: the
//     executor keeps whole bf16 param/grad buffers and persistent NS buffers, training does not.
//   - fsdp2 report: "peak allocated (with act.)", torch.cuda.max_memory_allocated against
//     memory_per_gpu's total for adamw (master + grads + state + transient + activations).
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
  std::string note;        // memory rows: the predicted breakdown (printed under the table)
  double rel_error() const { return predicted / measured - 1; }
  bool is_memory() const { return unit == "bytes"; }
};

struct Validation {
  std::string measured_file, machine, scenario_file, mode;
  std::vector<ValidationRow> rows;
  double max_abs_rel_error() const;         // time rows
  double max_abs_rel_error_memory() const;  // memory rows (0 when none)
};

// `scenario_file` overrides the report's "scenario"; `calibration` is passed to the cost
// model. Throws dmuon::Error naming the file and field on a malformed report.
Validation validate(const std::string& measured_file, const std::string& scenario_file, const std::string& calibration,
                    SimMode mode);
void print_validation(std::ostream& out, const Validation& v);
void write_validation_json(const std::string& file, const Validation& v, const std::string& command);

}  // namespace dmuon::simcli
