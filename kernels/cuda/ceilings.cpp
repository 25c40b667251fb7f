#include "kernels/cuda/ceilings.hpp"

#include <algorithm>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/median.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/owned_stream.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/lt_gemm.hpp"
#include "kernels/cuda/ns_kernels.hpp"

namespace dmuon::cuda {

double measure_gemm_tflops(long n, int repeats) {
  OwnedStream stream;
  const std::size_t bytes = static_cast<std::size_t>(n) * n * 2;
  DeviceBuffer a(bytes, "GEMM ceiling A"), b(bytes, "GEMM ceiling B"), d(bytes, "GEMM ceiling D");
  // Random data: zeros run measurably faster on Hopper (METHOD.md).
  launch_fill_normal(a.get(), DType::bf16, n * n, 11, 1.0f, stream.get());
  launch_fill_normal(b.get(), DType::bf16, n * n, 12, 1.0f, stream.get());
  LtGemm gemm;
  GemmOp op;
  op.a = {a.get(), n, n, n, 0};
  op.b = {b.get(), n, n, n, 0};
  op.d = {d.get(), n, n, n, 0};
  op.trans_a = true;  // the TN layout cuBLAS runs fastest
  const auto seconds = time_on_stream(stream.get(), 3, std::max(1, repeats), [&] { gemm.run(op, stream.get()); });
  return 2.0 * n * n * static_cast<double>(n) / median(seconds) / 1e12;
}

double measure_copy_GBps(std::size_t bytes, int repeats) {
  OwnedStream stream;
  DeviceBuffer src(bytes, "copy ceiling source"), dst(bytes, "copy ceiling destination");
  DMUON_CUDA_CHECK(cudaMemsetAsync(src.get(), 1, bytes, stream.get()));
  const auto seconds = time_on_stream(stream.get(), 2, std::max(1, repeats), [&] {
    DMUON_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream.get()));
  });
  return 2.0 * static_cast<double>(bytes) / median(seconds) / 1e9;
}

}  // namespace dmuon::cuda
