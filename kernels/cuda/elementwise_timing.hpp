// What the simulator prices elementwise work and launches with, measured on the GPU in use for
// `dmuon-bench calibrate`: the cost of one kernel launch, and the fused optimizer kernels
// (kernels/cuda/elementwise.hpp) and a device copy timed against size. No CUDA header here.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

namespace dmuon::cuda {

// Median seconds per launch of an empty kernel launched `per_sample` times back to back on one
// stream (no graph), over `samples` samples: the launch rate a stream of small kernels reaches.
double measure_launch_overhead_seconds(int samples = 21, int per_sample = 1000);

// (payload bytes, seconds of one launch) points, bytes as CostModel counts them
// (core/cost/calibration.hpp: momentum_bytes, muon_update_bytes, adamw_bytes; copy: read + written).
struct ElementwiseSizeCurves {
  std::vector<std::pair<double, double>> momentum, muon_update, adamw, copy;
};

// Every kernel at payloads min_bytes, 4 min_bytes, ... up to max_bytes: one launch per timed
// call, median of `repeats` (fewer above 64 MiB) after warm-up, on the current device. The
// kernels run with bf16 gradients, fp32 state and bf16 outputs (what the executor runs and the
// CostModel byte counts assume); AdamW over up to 64 tensors in one multi-tensor launch, as the
// executor hands it a rank's parameters. Throws dmuon::Error on a CUDA failure or bad sizes.
ElementwiseSizeCurves measure_elementwise_curves(std::size_t min_bytes, std::size_t max_bytes, int repeats = 15);

}  // namespace dmuon::cuda
