#include "core/optimizer/ns_rounding.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dmuon {
namespace {

double unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::fp64: return 0x1.0p-53;
    case DType::fp32: return 0x1.0p-24;
    case DType::fp16: return 0x1.0p-11;
    case DType::bf16: return 0x1.0p-8;
  }
  return 0x1.0p-53;
}

// Stored (rounded) matrices on the path from input to output, and those stored per iteration.
struct StoreCount {
  int total = 0;
  int per_step = 0;
};

StoreCount store_count(const NsConfig& ns) {
  if (ns.variant == NsVariant::standard) {
    // fused: A, B, X a step; separate: A, b*A, c*A, (c*A)A, B, a*X, B X, X. Plus the input.
    const int per = ns.products == NsProducts::fused ? 3 : 8;
    return {1 + per * ns.steps, per};
  }
  // Gram: the input and R, then Z and Q every step, RZ and R' where R evolves, X and R at each
  // restart, and the final Q X.
  int total = 3;
  for (int t = 0; t < ns.steps; ++t) {
    total += 2;
    const bool restart_next = std::find(ns.restarts.begin(), ns.restarts.end(), t + 1) != ns.restarts.end();
    if (t + 1 < ns.steps && !restart_next) total += 2;
    if (restart_next && t + 1 < ns.steps) total += 2;
  }
  return {total, 4};
}

// sum_t |a_t| |d log NS(s) / d a_t| at s = 1 over the steps whose `a` Gram NS stores in the
// compute dtype (the first step and each restart: Q = Z + a*I, as DMuon's torch code rounds a*I).
// Evaluated by forward differentiation of the composed scalar map.
double stored_coefficient_gain(const NsConfig& ns) {
  if (ns.variant != NsVariant::gram) return 0;
  std::vector<double> s(ns.steps + 1, 1.0);
  for (int t = 0; t < ns.steps; ++t) s[t + 1] = ns.coefficient(t).apply(s[t]);
  if (s[ns.steps] == 0) return 0;
  double gain = 0;
  for (int t = 0; t < ns.steps; ++t) {
    const bool stored = t == 0 || std::find(ns.restarts.begin(), ns.restarts.end(), t) != ns.restarts.end();
    if (!stored) continue;
    double d = s[t];  // d s_{t+1} / d a_t
    for (int k = t + 1; k < ns.steps; ++k) {
      const NsCoefficient c = ns.coefficient(k);
      const double x2 = s[k] * s[k];
      d *= c.a + 3 * c.b * x2 + 5 * c.c * x2 * x2;
    }
    gain += std::abs(ns.coefficient(t).a * d / s[ns.steps]);
  }
  return gain;
}

}  // namespace

double ns_rounding_tolerance(const NsConfig& ns, double kappa) {
  // First-order rounding analysis with unit roundoff u of the storage dtype (2^-8 bf16, 2^-11
  // fp16); the error is measured against ||polar factor||_F. Three parts, none fitted to the
  // suite:
  // 1. Storage noise. Each stored matrix M carries independent round-to-nearest errors of RMS
  //    u/sqrt(3) relative to its elements, i.e. (u/sqrt(3)) ||M||_F; near convergence the
  //    iteration passes them on with gain about 1 (rotations are kept, singular-value errors
  //    are damped). N such stores add in quadrature; three standard deviations:
  //    3 (u/sqrt(3)) sqrt(N) = u sqrt(3N). (N = 16 for 5 fused standard steps: 6.9u; 21 for
  //    DMuon's Gram schedule: 7.9u.)
  // 2. Ill-conditioning. A singular value s << 1 grows by about a_t a step (the schedule's linear
  //    coefficient), so every halving of s costs 1/log2(abar) more steps (abar: geometric mean of
  //    the a_t, each counted as at least 2) before it converges, each adding that step's stores at the same relative size:
  //    u sqrt(3) n_step / log2(abar) per octave of kappa, twice that for Gram, whose R = X X^T
  //    squares the condition number. (Keller, standard: 2.9u an octave; Polar Express, Gram: 7.2u.)
  // 3. Stored coefficients (Gram only). Q = Z + a*I rounds a to the dtype: |delta a_t| <= u |a_t|,
  //    which moves the output by u |a_t| |d log NS / d a_t|, worst case over signs, at s = 1
  //    where a rank-1 input's single singular value sits (Polar Express / 1.05: 15u + 16u; the
  //    trajectory overshoots to 1.67 there). Measured: 29u on 1 x n inputs, DMuon's own result
  //    included.
  // Measured on the suite's inputs (standard ~3u well-conditioned, ~21u at kappa 1e4; Gram up to
  // ~65u at kappa 1e4 in fp16) these bounds hold with a margin of 1.3x or more.
  const double u = unit_roundoff(ns.compute_dtype);
  const StoreCount stores = store_count(ns);
  double log_abar = 0;
  for (int t = 0; t < ns.steps; ++t) log_abar += std::log2(std::max(2.0, std::abs(ns.coefficient(t).a)));
  log_abar /= std::max(1, ns.steps);
  const double squaring = ns.variant == NsVariant::gram ? 2.0 : 1.0;
  const double per_octave = squaring * std::sqrt(3.0) * stores.per_step / log_abar;
  const double log_kappa = std::min(60.0, std::log2(std::max(1.0, kappa)));
  return u * (std::sqrt(3.0 * stores.total) + per_octave * log_kappa + stored_coefficient_gain(ns));
}

}  // namespace dmuon
