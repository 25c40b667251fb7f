// Keeps every SM of the current device busy for a while, so the GPU's clocks are where a
// training step's are before something small is timed. An idle H100 drops its SM clock within
// milliseconds; a kernel of a few microseconds then runs several times slower than the same kernel
// between a step's GEMMs (the collective sweep's one-rank points, reports/sim-validation.md).
#pragma once
#include <cuda_runtime_api.h>

namespace dmuon::cuda {

// Enqueues on `stream` one block per SM spinning on the GPU's global timer for `seconds`, and
// returns the launch's error (cudaSuccess when seconds <= 0: nothing enqueued).
cudaError_t launch_busy(double seconds, cudaStream_t stream);

}  // namespace dmuon::cuda
