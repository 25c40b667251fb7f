// Moving Eigen matrices to and from the GPU engine: the one place where host doubles become
// device fp32/bf16/fp16 (row-major, PyTorch layout) and back. Built only with dmuon_kernels.
#pragma once
#include <cstdint>
#include <vector>

#include <Eigen/Dense>

#include "core/optimizer/dtype.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/ns_engine.hpp"

namespace dmuon::verify {

// Row-major bytes of `matrices` (all the same shape, back to back) stored as `dtype`
// (fp32, bf16, fp16; round-to-nearest-even through float, as the GPU converts).
std::vector<std::uint8_t> to_device_bytes(const std::vector<Eigen::MatrixXd>& matrices, DType dtype);
// The inverse for `count` rows x cols matrices.
std::vector<Eigen::MatrixXd> from_device_bytes(const std::vector<std::uint8_t>& bytes, DType dtype, long rows,
                                               long cols, int count);

// One batched NS call on the GPU: uploads `batch` (same shape) in `in_dtype`, runs `impl`,
// downloads the compute-dtype result. `names` label non-finite errors (may be empty).
std::vector<Eigen::MatrixXd> gpu_newton_schulz(cuda::NsEngine& engine, const std::vector<Eigen::MatrixXd>& batch,
                                               const NsConfig& ns, cuda::NsImpl impl, DType in_dtype,
                                               const std::vector<std::string>& names = {},
                                               cuda::NsOutcome* outcome = nullptr);

}  // namespace dmuon::verify
