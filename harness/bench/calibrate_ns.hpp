// The Newton-Schulz part of `dmuon-bench calibrate`: which calls to time (the scenario's Plans'
// batched calls, and a grid per kernel family and dtype for interpolation) and timing them as
// the executor runs them (autotuned variant, inputs in the compute dtype).
#pragma once
#include <string>
#include <vector>

#include "core/cost/calibration.hpp"
#include "core/io/scenario.hpp"
#include "kernels/cuda/ns_engine.hpp"

namespace dmuon::bench {

// One batched engine call: `batch` rows x cols matrices.
struct NsCallShape {
  long rows = 0, cols = 0;
  int batch = 1;
  std::string label() const;  // "4096x14336 b8"
};

// The distinct calls of every newton_schulz op of the Plans of the scenario's Muon strategies
// (every strategy but adamw), over all ranks of the scenario's cluster, planned as
// `dmuon-bench step` plans them (core plan_step, the profile's cost model, `max_batch`).
// Throws dmuon::Error from planning (naming the strategy).
std::vector<NsCallShape> scenario_ns_calls(const Scenario& scenario, int max_batch);

// none; small (m in {128, 256}, n/m in {1, 2}, batch 1 and 4: tests); full (m in 128..8192,
// n/m in {1, 2, 4, 8} with n <= 32768, batch 1, and batch 4 and 16 for m <= 1024).
enum class NsGrid { none, small, full };
NsGrid parse_ns_grid(const std::string& name, const std::string& what);
std::vector<NsCallShape> ns_grid_calls(NsGrid grid);

// A Newton-Schulz configuration to time, and where it came from ("scenario (dmuon)", "torch").
struct NsFamily {
  std::string label;
  NsConfig ns;
};
// The scenario's config, then the torch (bf16 standard) and dmuon (fp16 Gram) presets' configs
// unless one with the same (kernel family, dtype, steps, restarts) is already listed: the keys
// the cost model interpolates within.
std::vector<NsFamily> ns_families(const OptimizerConfig& scenario_optimizer);

// Times each call of `calls` under `family` with the autotuned implementation (median of CUDA
// graph replays; fewer repeats for large calls) and appends one NsMeasurement per call to `out`,
// keyed by the config's kernel family (ns_kernel_of), (min, max) dims and batch; a call whose
// key `out` already holds is skipped. Prints each call and the implementation that ran to
// stderr, tagged `what`. Frees the engine's workspace between calls (bounded peak memory).
void time_ns_calls(cuda::NsEngine& engine, const NsFamily& family, const std::vector<NsCallShape>& calls,
                   const std::string& what, std::vector<NsMeasurement>& out);

}  // namespace dmuon::bench
