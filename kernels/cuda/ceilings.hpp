// The two device ceilings every benchmark figure is read against, measured on the GPU in use:
// a large bf16 matrix product through cuBLASLt and a large device-to-device copy.
#pragma once
#include <cstddef>

namespace dmuon::cuda {

// n x n x n bf16 product (fp32 accumulation) on random data, median of `repeats` after warm-up,
// in TFLOP/s (2 n^3 flops per product).
double measure_gemm_tflops(long n, int repeats);
// cudaMemcpyAsync device-to-device of `bytes`, median of `repeats`, in GB/s counting the bytes
// read plus the bytes written (2 * bytes per copy), as CostModel's hbm_GBps does.
double measure_copy_GBps(std::size_t bytes, int repeats);

}  // namespace dmuon::cuda
