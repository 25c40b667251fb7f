// Measuring one Plan on one rank of a running job (dmuon-bench step): random parameters and
// gradients, warm-up, then per iteration the forward+backward communication and the optimizer
// step as two timed runs, separated by barriers so every rank starts each run together. With
// the compute stand-in (kernels/exec/compute_standin.hpp), each iteration is instead one timed run
// of the whole step: forward and backward with the model's weight GEMMs on the compute stream
// in the schedule of core/plan/step_units.hpp, then the optimizer step.
// No CUDA header: the harness calls it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/cost/forward_backward_cost.hpp"
#include "core/model/model_spec.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"
#include "core/plan/step_units.hpp"
#include "kernels/exec/launch.hpp"
#include "kernels/exec/timing.hpp"

namespace dmuon::exec {

struct BenchOptions {
  int warmup = 3;
  int iterations = 10;
  std::uint64_t seed = 20261122;
  double timeout_seconds = 300;
  std::string ns_impl = "automatic";   // an NsImpl name
  std::string tune_cache_file;         // the NS engine's autotune cache ("" in memory)
};

// The compute stand-in's inputs: the step's units (their GEMMs) and this rank's schedule of
// the plan (core/plan/step_units.hpp step_schedule).
struct StandinInputs {
  const ForwardBackwardCost* cost = nullptr;
  StepSchedule schedule;
};

struct IterationSample {
  RunTiming comm_phase;  // forward + backward ops (the strategy's collectives around the step)
  RunTiming optimizer;   // optimizer-phase ops
  RunTiming whole_step;  // with the stand-in (then the two above are empty): the step as one run
};

struct RankMeasurement {
  std::vector<IterationSample> samples;
  bool standin = false;        // the samples are whole_step runs
  double standin_flops = 0;    // the stand-in's GEMM FLOPs a step on this rank
  double allocated_bytes = 0;  // executor buffers on this rank
  int staged_ns_calls = 0;     // NS batches that needed a staging copy (0 when the layout allowed)
};

// Throws dmuon::Error naming the flag (--timeout, --warmup, --iterations) when `options` cannot
// be measured with: a timeout that is not a positive finite number of seconds (0 would abort
// every phase at once, NaN never one), a negative warm-up, fewer than one timed iteration.
// Host-only: dmuon-bench step calls it before any GPU work; measure_plan calls it too.
void validate(const BenchOptions& options);

// Collective: every rank calls it with the same plan (and all with or all without `standin`).
// Throws dmuon::Error naming the rank and op on a failure (after aborting the communicators).
RankMeasurement measure_plan(RankHandle& rank, const Plan& plan, const ModelSpec& model, const Routing& routing,
                             const OptimizerConfig& config, const BenchOptions& options,
                             const StandinInputs* standin = nullptr);

}  // namespace dmuon::exec
