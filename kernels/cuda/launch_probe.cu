// The smallest kernel there is, for measuring what one launch costs (dmuon-bench calibrate).
#include <cuda_runtime_api.h>

namespace dmuon::cuda {
namespace {

__global__ void empty_kernel() {}

}  // namespace

// Enqueues `count` empty one-thread kernels back to back on `stream`; the first launch error.
cudaError_t launch_empty_kernels(int count, cudaStream_t stream) {
  for (int i = 0; i < count; ++i) {
    empty_kernel<<<1, 1, 0, stream>>>();
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

}  // namespace dmuon::cuda
