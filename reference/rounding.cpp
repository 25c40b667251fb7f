#include "reference/rounding.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace dmuon::ref {
namespace {

constexpr std::uint32_t kFloatAbsMask = 0x7FFFFFFFu;
constexpr std::uint32_t kFloatInfBits = 0x7F800000u;

// Shift `value` right by `shift` bits, rounding the dropped bits to nearest, ties to even.
std::uint32_t shift_right_nearest_even(std::uint32_t value, int shift) {
  const std::uint32_t kept = value >> shift;
  const std::uint32_t dropped = value & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  const bool round_up = dropped > half || (dropped == half && (kept & 1u));
  return kept + (round_up ? 1u : 0u);
}

}  // namespace

std::uint16_t bf16_bits(float x) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(x);
  // NaN: keep the sign and force a quiet-NaN mantissa bit; the rounding add below could
  // otherwise carry a NaN with only low mantissa bits into infinity.
  if ((f & kFloatAbsMask) > kFloatInfBits) return static_cast<std::uint16_t>((f >> 16) | 0x0040u);
  // bf16 is the top half of a float: drop 16 bits, nearest-even. A carry out of the mantissa
  // correctly bumps the exponent (and FLT_MAX-ish values correctly reach infinity).
  return static_cast<std::uint16_t>(shift_right_nearest_even(f, 16));
}

std::uint16_t fp16_bits(float x) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t a = f & kFloatAbsMask;
  if (a > kFloatInfBits) return static_cast<std::uint16_t>(sign | 0x7E00u);  // quiet NaN
  // 65520 = halfway between 65504 (max fp16, odd mantissa) and 2^16: ties go to infinity.
  if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (a >= 0x38800000u) {  // |x| >= 2^-14: a normal fp16
    // Rebias the exponent (127 -> 15) and drop 13 mantissa bits; a mantissa carry moves
    // into the exponent, which is right (and cannot reach infinity below 65520).
    const std::uint32_t rebiased = a - (112u << 23);
    return static_cast<std::uint16_t>(sign | shift_right_nearest_even(rebiased, 13));
  }
  // Subnormal fp16: value = k * 2^-24. Float normals here have a 24-bit significand
  // s * 2^(e-150); k = s * 2^(e-126), i.e. a right shift by 126 - e (>= 14).
  const int exponent = static_cast<int>(a >> 23);
  if (exponent < 102) return static_cast<std::uint16_t>(sign);  // |x| < 2^-25: below half of 2^-24
  const std::uint32_t significand = (a & 0x7FFFFFu) | 0x800000u;
  // k <= 1024 = 2^-14 / 2^-24: the carry into the smallest normal is the right encoding too.
  return static_cast<std::uint16_t>(sign | shift_right_nearest_even(significand, 126 - exponent));
}

double bf16_value(std::uint16_t bits) {
  return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16));
}

double fp16_value(std::uint16_t bits) {
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1F;
  const int mantissa = bits & 0x3FF;
  if (exponent == 0x1F) {
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

double round_to(double x, DType dtype) {
  switch (dtype) {
    case DType::fp64: return x;
    case DType::fp32: return static_cast<double>(static_cast<float>(x));
    case DType::bf16: return bf16_value(bf16_bits(static_cast<float>(x)));
    case DType::fp16: return fp16_value(fp16_bits(static_cast<float>(x)));
  }
  return x;
}

void round_in_place(Eigen::MatrixXd& m, DType dtype) {
  if (dtype == DType::fp64) return;
  m = m.unaryExpr([dtype](double v) { return round_to(v, dtype); });
}

}  // namespace dmuon::ref
