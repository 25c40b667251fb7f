// Timing of Newton-Schulz variants and of the fused elementwise kernels on the GPU in use
// (CUDA events, warm-up, median, inputs rotated so the L2 cache does not hold them).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/cost/calibration.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "harness/bench/kernel_shapes.hpp"
#include "kernels/cuda/ns_engine.hpp"

namespace dmuon::bench {

struct TimingOptions {
  int warmup = 3;
  int repeats = 10;
  std::size_t rotate_bytes = 150u << 20;  // input sets span at least this (3x the H100's L2)
  // fp32: what torch.optim.Muon hands its NS (dmuon-bench kernels); the executor hands the
  // engine its compute dtype (dmuon-bench calibrate times it that way).
  DType in_dtype = DType::fp32;
  // false: time the winner the engine already knows (its tune cache) without re-timing every
  // candidate first (a key the cache lacks is still tuned): the process then launches only the
  // timed calls, which is what a profiler of one call needs. The row lists the winner alone.
  bool retune = true;
};

struct VariantTime {
  cuda::NsImpl impl = cuda::NsImpl::standard;
  bool available = true, passed_gate = false, timed = false;
  double rel_diff = 0;  // vs the standard implementation, from the autotuner (NaN: not re-tuned)
  double median_seconds = 0;
  std::string note;
};

struct NsBenchRow {
  BenchShape shape;
  std::string preset;
  NsConfig ns;
  int batch = 1;
  std::vector<VariantTime> variants;
  cuda::NsImpl chosen = cuda::NsImpl::standard;
  double chosen_seconds = 0;  // the whole batched call
  double useful_tflops = 0;   // batch * ns_useful_flops / chosen_seconds
};

// Autotunes (shape, batch, ns), then times the winner, or every implementation that is available
// and passed the gate when all_variants, on options.in_dtype inputs. options.retune false (only
// without all_variants): the engine's known winner, not re-tuned.
NsBenchRow time_ns(cuda::NsEngine& engine, const BenchShape& shape, int batch, const std::string& preset,
                   const NsConfig& ns, const TimingOptions& options, bool all_variants);

// Fused momentum (ema, Nesterov), Muon update (bf16 copy-out) and multi-tensor AdamW (64 tensors,
// bf16 copy-out) over n elements with bf16 gradients; GB/s by the CostModel byte counts.
ElementwiseRates time_elementwise(std::int64_t n, int repeats);

}  // namespace dmuon::bench
