// What `dmuon-bench kernels` writes: the torch baseline it reads, the speedup summaries against
// it, reports/kernels-<gpu>.md and .json, and the calibration table for the simulator.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cost/calibration.hpp"
#include "harness/bench/ns_timing.hpp"
#include "harness/bench/sym_kernel_rates.hpp"
#include "harness/bench/whole_model.hpp"

namespace dmuon::bench {

// harness/tools/torch_ns_baseline.py's JSON (format dmuon-torch-ns-baseline-1).
struct TorchBaseline {
  std::string torch_version, device, flags;
  std::map<std::pair<long, long>, double> seconds;    // (rows, cols) -> median seconds
  std::map<std::pair<long, long>, double> best_seconds;  // (rows, cols) -> fastest sample (min_seconds)
  std::map<std::pair<long, long>, double> rel_error;  // torch's bf16 error vs float64
};
// Throws dmuon::Error naming the file on a missing file or a malformed entry.
TorchBaseline load_torch_baseline(const std::string& file);

struct KernelBench {
  std::string command, date, gpu_name, profile;
  double gemm_tflops = 0, hbm_GBps = 0;
  ElementwiseRates elementwise;
  std::vector<NsBenchRow> rows;
  std::vector<SymKernelRate> sym_rates;  // empty where the sm_90a kernel cannot run
  std::optional<TorchBaseline> torch;
};

// One summary figure: a geometric mean of torch_seconds / our per-matrix seconds.
struct Speedup {
  double geomean = 0;
  int shapes = 0;
};
// Over rows of `preset` at batch 1 (or at the model's batch, per matrix, when batched) whose
// shape comes from a model file, with aspect >= min_aspect. Zero shapes when no torch baseline.
Speedup speedup_vs_torch(const KernelBench& b, const std::string& preset, bool batched, double min_aspect);

// Each model's whole Newton-Schulz time, ours against torch's (harness/bench/whole_model.hpp);
// empty without a torch baseline.
std::vector<WholeModelSpeedup> whole_model_vs_torch(const KernelBench& b);

void write_report_json(const KernelBench& b, const std::string& path);
void write_report_markdown(const KernelBench& b, const std::string& path);
// Per (min dim, max dim, kernel family, dtype, steps, restarts, batch) the fastest timed variant.
CalibrationTable calibration_of(const KernelBench& b);

}  // namespace dmuon::bench
