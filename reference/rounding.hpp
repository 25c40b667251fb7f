// Storage rounding of the reference: what a value becomes when a GPU stores it as fp32/bf16/fp16.
#pragma once
#include <cstdint>

#include <Eigen/Core>

#include "core/optimizer/dtype.hpp"

namespace dmuon::ref {

// exact: no rounding anywhere (the mathematical algorithm, in double).
// emulate: every intermediate a GPU path stores is rounded to the dtype it is stored in.
enum class Rounding { exact, emulate };

// Round-to-nearest-even of an fp32 value to bf16 / fp16 bit patterns, the way the CUDA
// intrinsics __float2bfloat16_rn and __float2half_rn do it (fp16: subnormals kept, overflow
// to +-inf, NaN stays NaN).
std::uint16_t bf16_bits(float x);
std::uint16_t fp16_bits(float x);
double bf16_value(std::uint16_t bits);
double fp16_value(std::uint16_t bits);

// fp64: x. fp32: (double)(float)x. bf16/fp16: first (float)x, then rounded from the float,
// because a GPU kernel rounds its fp32 accumulator, never a double.
double round_to(double x, DType dtype);
void round_in_place(Eigen::MatrixXd& m, DType dtype);

}  // namespace dmuon::ref
