// Measuring one Plan on one rank of a running job (dmuon-bench step): random parameters and
// gradients, warm-up, then per iteration the forward+backward communication and the optimizer
// step as two timed runs, separated by barriers so every rank starts each run together.
// No CUDA header: the harness calls it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.hpp"
#include "core/optimizer_config.hpp"
#include "core/plan.hpp"
#include "core/routing.hpp"
#include "kernels/executor_launch.hpp"
#include "kernels/executor_timing.hpp"

namespace dmuon::exec {

struct BenchOptions {
  int warmup = 3;
  int iterations = 10;
  std::uint64_t seed = 20261122;
  double timeout_seconds = 300;
  std::string ns_impl = "automatic";   // an NsImpl name
  std::string tune_cache_file;         // the NS engine's autotune cache ("" in memory)
};

struct IterationSample {
  RunTiming comm_phase;  // forward + backward ops (the strategy's collectives around the step)
  RunTiming optimizer;   // optimizer-phase ops
};

struct RankMeasurement {
  std::vector<IterationSample> samples;
  double allocated_bytes = 0;  // executor buffers on this rank
  int staged_ns_calls = 0;     // NS batches that needed a staging copy (0 when the layout allowed)
};

// Throws dmuon::Error naming the flag (--timeout, --warmup, --iterations) when `options` cannot
// be measured with: a timeout that is not a positive finite number of seconds (0 would abort
// every phase at once, NaN never one), a negative warm-up, fewer than one timed iteration.
// Host-only: dmuon-bench step calls it before any GPU work; measure_plan calls it too.
void validate(const BenchOptions& options);

// Collective: every rank calls it with the same plan. Throws dmuon::Error naming the rank and
// op on a failure (after aborting the communicators).
RankMeasurement measure_plan(RankHandle& rank, const Plan& plan, const ModelSpec& model, const Routing& routing,
                             const OptimizerConfig& config, const BenchOptions& options);

}  // namespace dmuon::exec
