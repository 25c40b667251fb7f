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

// none; small (m in {128, 256}, n/m in {1, 2}, batch 1 and 4: tests); full (m in 128..1024 by
// octaves, then 1536, 2048, 3072, 4096, 6144, 8192; n/m in {1, 2, 4, 8} with n <= 32768; batch 1,
// and 4, 16 and 64 where the call holds at most `max_batch_elements` elements).
enum class NsGrid { none, small, full };
NsGrid parse_ns_grid(const std::string& name, const std::string& what);
// 2^30 elements (a 4 GiB fp32 input): a Plan's batch of 56 matrices of 1536 x 8960 (770M) is
// inside, so such calls are priced from batch 16-64 points. Until 2026-11-27 the bound was 2^28,
// which measured 1536 x 12288 only up to batch 4 and 1536 x 6144 up to 16, and the simulator priced
// qwen2.5-1.5b's four batched NS calls 15% slow on 1 x H100 (reports/sim-validation.md, stop 43).
constexpr long kDefaultGridBatchElements = 1L << 30;
// Throws dmuon::Error when max_batch_elements < 1.
std::vector<NsCallShape> ns_grid_calls(NsGrid grid, long max_batch_elements = kDefaultGridBatchElements);

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
