// reference/rounding: exact bf16/fp16 values, ties to even, overflow, subnormals, and the
// double -> float -> half path a GPU takes.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "catch_compat.hpp"
#include "reference/rounding.hpp"

using dmuon::DType;
using dmuon::ref::round_to;

namespace {

double p2(int e) { return std::ldexp(1.0, e); }

// Every finite non-negative fp16 value, decoded independently of the code under test:
// index k is the value of bit pattern k (k < 0x7C00), so an even k has an even mantissa.
std::vector<double> all_fp16_values() {
  std::vector<double> v;
  for (int k = 0; k < 0x7C00; ++k) {
    const int e = k >> 10, m = k & 0x3FF;
    v.push_back(e == 0 ? m * p2(-24) : (1024 + m) * p2(e - 25));
  }
  return v;
}

// Nearest fp16 by search over the table, ties to the even pattern; for |x| <= 65504.
double nearest_fp16_by_search(double x, const std::vector<double>& table) {
  const double a = std::fabs(x);
  const auto hi = std::lower_bound(table.begin(), table.end(), a);
  if (*hi == a) return std::copysign(a, x);
  const auto lo = hi - 1;
  const double dlo = a - *lo, dhi = *hi - a;
  const bool lo_even = ((lo - table.begin()) % 2) == 0;
  const double pick = (dlo < dhi || (dlo == dhi && lo_even)) ? *lo : *hi;
  return std::copysign(pick, x);
}

}  // namespace

TEST_CASE("fp64 is the identity and fp32 is the float cast", "[rounding]") {
  CHECK(round_to(0.1, DType::fp64) == 0.1);
  CHECK(round_to(0.1, DType::fp32) == static_cast<double>(0.1f));
  CHECK(round_to(0.1, DType::fp32) != 0.1);
  CHECK(round_to(1.0 + p2(-30), DType::fp32) == 1.0);
  CHECK(round_to(1.0 + p2(-23), DType::fp32) == 1.0 + p2(-23));
}

TEST_CASE("bf16 rounds to nearest, ties to even", "[rounding]") {
  CHECK(round_to(1.0, DType::bf16) == 1.0);
  CHECK(round_to(0.1, DType::bf16) == 0.10009765625);  // float 0x3DCCCCCD -> bf16 0x3DCD
  CHECK(dmuon::ref::bf16_bits(0.1f) == 0x3DCD);
  CHECK(round_to(1.0 + p2(-8), DType::bf16) == 1.0);                   // tie, 1.0 is even
  CHECK(round_to(1.0 + 3 * p2(-8), DType::bf16) == 1.0 + p2(-6));      // tie, up to even
  CHECK(round_to(1.0 + p2(-8) + p2(-20), DType::bf16) == 1.0 + p2(-7));  // just above the tie
  CHECK(round_to(-(1.0 + 3 * p2(-8)), DType::bf16) == -(1.0 + p2(-6)));
  CHECK(round_to(3.0, DType::bf16) == 3.0);
  CHECK(round_to(1.0 / 3.0, DType::bf16) == 0.333984375);  // 0x3EAB
}

TEST_CASE("bf16 and fp16 round from the float, not from the double", "[rounding]") {
  // 1 + 2^-8 + 2^-30 is above the bf16 tie, but its float is exactly the tie: the GPU sees the
  // float, so the tie goes to even (1.0). A direct double rounding would give 1 + 2^-7.
  CHECK(round_to(1.0 + p2(-8) + p2(-30), DType::bf16) == 1.0);
  CHECK(round_to(1.0 + p2(-11) + p2(-40), DType::fp16) == 1.0);
}

TEST_CASE("bf16 overflow, infinities, NaN, signed zero, subnormals", "[rounding]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double max_bf16 = std::ldexp(2.0 - p2(-7), 127);
  CHECK(round_to(max_bf16, DType::bf16) == max_bf16);
  CHECK(round_to(std::ldexp(2.0 - p2(-8), 127), DType::bf16) == inf);  // tie, odd max -> inf
  CHECK(round_to(std::ldexp(2.0 - p2(-8) - p2(-20), 127), DType::bf16) == max_bf16);
  CHECK(round_to(-std::numeric_limits<float>::max(), DType::bf16) == -inf);
  CHECK(round_to(inf, DType::bf16) == inf);
  CHECK(std::isnan(round_to(std::numeric_limits<double>::quiet_NaN(), DType::bf16)));
  // A NaN whose payload sits only in the low 16 bits must not round into infinity.
  const float low_payload_nan = std::bit_cast<float>(std::uint32_t{0x7F800001u});
  CHECK(std::isnan(dmuon::ref::bf16_value(dmuon::ref::bf16_bits(low_payload_nan))));
  CHECK(std::signbit(round_to(-0.0, DType::bf16)));
  CHECK(round_to(p2(-133), DType::bf16) == p2(-133));      // smallest bf16 subnormal
  CHECK(round_to(p2(-134), DType::bf16) == 0.0);           // tie with 0 -> 0
  CHECK(round_to(1.5 * p2(-134), DType::bf16) == p2(-133));
}

TEST_CASE("fp16 exact values, ties to even and overflow to infinity", "[rounding]") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(round_to(0.1, DType::fp16) == 0.0999755859375);  // 0x2E66
  CHECK(dmuon::ref::fp16_bits(0.1f) == 0x2E66);
  CHECK(round_to(1.0 + p2(-11), DType::fp16) == 1.0);              // tie, even
  CHECK(round_to(1.0 + 3 * p2(-11), DType::fp16) == 1.0 + p2(-9));  // tie, up to even
  CHECK(round_to(2049.0, DType::fp16) == 2048.0);                   // spacing 2 above 2048
  CHECK(round_to(2051.0, DType::fp16) == 2052.0);
  CHECK(round_to(65504.0, DType::fp16) == 65504.0);
  CHECK(round_to(65519.0, DType::fp16) == 65504.0);
  CHECK(round_to(65520.0, DType::fp16) == inf);  // tie between 65504 (odd) and 2^16
  CHECK(round_to(-65520.0, DType::fp16) == -inf);
  CHECK(round_to(1e6, DType::fp16) == inf);
  CHECK(round_to(1e300, DType::fp16) == inf);
  CHECK(std::isnan(round_to(std::numeric_limits<double>::quiet_NaN(), DType::fp16)));
  CHECK(std::signbit(round_to(-0.0, DType::fp16)));
  CHECK(round_to(-inf, DType::fp16) == -inf);
}

TEST_CASE("fp16 subnormals", "[rounding]") {
  CHECK(round_to(p2(-24), DType::fp16) == p2(-24));           // smallest subnormal
  CHECK(round_to(p2(-25), DType::fp16) == 0.0);               // tie with 0 -> 0
  CHECK(round_to(1.5 * p2(-25), DType::fp16) == p2(-24));
  CHECK(round_to(3 * p2(-25), DType::fp16) == p2(-23));       // 1.5 quanta: tie up to even 2
  CHECK(round_to(5 * p2(-25), DType::fp16) == p2(-23));       // 2.5 quanta: tie down to even 2
  CHECK(round_to(1023 * p2(-24), DType::fp16) == 1023 * p2(-24));  // largest subnormal
  CHECK(round_to(1023.5 * p2(-24), DType::fp16) == p2(-14));  // carry into the smallest normal
  CHECK(round_to(p2(-14), DType::fp16) == p2(-14));
  CHECK(round_to(-3 * p2(-25), DType::fp16) == -p2(-23));
  CHECK(round_to(1e-10, DType::fp16) == 0.0);
  CHECK(dmuon::ref::fp16_bits(static_cast<float>(p2(-24))) == 0x0001);
  CHECK(dmuon::ref::fp16_bits(static_cast<float>(p2(-14))) == 0x0400);
}

TEST_CASE("fp16 rounding equals a nearest-value search over every fp16", "[rounding]") {
  const std::vector<double> table = all_fp16_values();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-27.0, 15.99);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int i = 0; i < 20000; ++i) {
    const double x = (unit(rng) < 0.5 ? -1 : 1) * std::exp2(exponent(rng));
    const double through_float = static_cast<double>(static_cast<float>(x));
    REQUIRE(round_to(x, DType::fp16) == nearest_fp16_by_search(through_float, table));
  }
  // Exact midpoints between neighbours are the tie cases.
  for (std::size_t k = 1; k + 1 < table.size(); k += 97) {
    const double mid = 0.5 * (table[k] + table[k + 1]);
    REQUIRE(round_to(mid, DType::fp16) == table[k % 2 == 0 ? k : k + 1]);
  }
}

TEST_CASE("bf16 results are bf16 values within half an ulp", "[rounding]") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> exponent(-120.0, 120.0);
  for (int i = 0; i < 20000; ++i) {
    const double x = std::exp2(exponent(rng)) * (i % 2 ? 1 : -1);
    const double y = round_to(x, DType::bf16);
    REQUIRE(round_to(y, DType::bf16) == y);                                   // idempotent
    REQUIRE(static_cast<double>(static_cast<float>(y)) == y);                 // a float too
    const double ulp = std::ldexp(1.0, std::ilogb(y) - 7);
    REQUIRE(std::fabs(y - static_cast<float>(x)) <= 0.5 * ulp);
    // The low 16 bits of the float are zero.
    REQUIRE((std::bit_cast<std::uint32_t>(static_cast<float>(y)) & 0xFFFFu) == 0u);
  }
}

TEST_CASE("round_in_place rounds every element", "[rounding]") {
  Eigen::MatrixXd m(2, 3);
  m << 0.1, 1.0 + p2(-8), 65520.0, -3 * p2(-25), 1.0 / 3.0, -0.7;
  for (DType d : {DType::fp64, DType::fp32, DType::bf16, DType::fp16}) {
    Eigen::MatrixXd r = m;
    dmuon::ref::round_in_place(r, d);
    for (Eigen::Index i = 0; i < m.size(); ++i) CHECK(r(i) == round_to(m(i), d));
  }
  Eigen::MatrixXd h = m;
  dmuon::ref::round_in_place(h, DType::fp16);
  CHECK(h(0, 2) == std::numeric_limits<double>::infinity());
  CHECK(h(1, 0) == -p2(-23));
}
