#include "core/cost/ns_flops.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace dmuon {
namespace {

void check_call(long rows, long cols, int steps, const std::vector<int>& restarts) {
  if (rows < 1 || cols < 1) {
    throw Error("Newton-Schulz flops: matrix " + std::to_string(rows) + "x" + std::to_string(cols) +
                " has a non-positive dimension");
  }
  if (steps < 1) throw Error("Newton-Schulz flops: steps must be >= 1, got " + std::to_string(steps));
  int previous = 0;
  for (int r : restarts) {
    if (r < 1 || r >= steps || r <= previous) {
      throw Error("Newton-Schulz flops: restarts must be strictly increasing in [1, " +
                  std::to_string(steps - 1) + "], got " + std::to_string(r));
    }
    previous = r;
  }
}

// What a Gram call does, counted in units of its three product kinds. Every m x m product is a
// symmetric polynomial in R, so the blog counts each as m^3 (half of 2 m^3); X X^T is m^2 n
// (one triangle); Q X is a general rectangular product, 2 m^2 n.
struct GramWork {
  int square_products = 0;  // m x m products, m^3 each
  int gram_products = 0;    // R = X X^T, m^2 n each
  int rect_products = 0;    // X = Q X, 2 m^2 n each
  int gemms() const { return square_products + gram_products + rect_products; }
};

GramWork gram_work(int steps, const std::vector<int>& restarts) {
  auto restart_at = [&](int t) { return std::find(restarts.begin(), restarts.end(), t) != restarts.end(); };
  GramWork w;
  w.gram_products = 1;  // initial R = X X^T
  for (int t = 0; t < steps; ++t) {
    if (restart_at(t)) {  // X = Q X, R = X X^T; Q starts again from the identity
      w.rect_products += 1;
      w.gram_products += 1;
    }
    w.square_products += 1;  // Z = c R^2 + b R (b R rides in the epilogue)
    // Q = Z + a I is free on the first iteration and right after a restart (Q was I).
    if (t != 0 && !restart_at(t)) w.square_products += 1;
    // R = Z (R Z + a R) + a (...): skipped after the last step and before a restart, where R
    // is rebuilt from X instead.
    if (t < steps - 1 && !restart_at(t + 1)) w.square_products += 2;
  }
  w.rect_products += 1;  // final X = Q X
  return w;
}

}  // namespace

std::string_view to_string(NsKernel kernel) {
  switch (kernel) {
    case NsKernel::standard: return "standard";
    case NsKernel::symmetric: return "symmetric";
    case NsKernel::gram: return "gram";
  }
  return "?";
}

NsKernel parse_ns_kernel(std::string_view name, const std::string& what) {
  if (name == "standard") return NsKernel::standard;
  if (name == "symmetric") return NsKernel::symmetric;
  if (name == "gram") return NsKernel::gram;
  throw Error(what + ": unknown Newton-Schulz kernel '" + std::string(name) +
              "' (expected standard, symmetric or gram)");
}

NsKernel ns_kernel_of(const NsConfig& ns) {
  return ns.variant == NsVariant::gram ? NsKernel::gram : NsKernel::standard;
}

double ns_flops(NsKernel kernel, long rows, long cols, int steps, const std::vector<int>& restarts) {
  check_call(rows, cols, steps, restarts);
  const double m = static_cast<double>(std::min(rows, cols));
  const double n = static_cast<double>(std::max(rows, cols));
  const double m2n = m * m * n, m3 = m * m * m;
  switch (kernel) {
    case NsKernel::standard: return steps * (4 * m2n + 2 * m3);
    case NsKernel::symmetric: return steps * (3 * m2n + m3);
    case NsKernel::gram: {
      const GramWork w = gram_work(steps, restarts);
      return w.square_products * m3 + w.gram_products * m2n + w.rect_products * 2 * m2n;
    }
  }
  return 0;
}

double ns_useful_flops(long rows, long cols, int steps) {
  return ns_flops(NsKernel::standard, rows, cols, steps, {});
}

NsProductCounts ns_product_counts(NsKernel kernel, int steps, const std::vector<int>& restarts) {
  check_call(1, 1, steps, restarts);
  if (kernel != NsKernel::gram) return {steps, steps, steps};
  const GramWork w = gram_work(steps, restarts);
  return {w.square_products, w.gram_products, w.rect_products};
}

int ns_gemm_count(NsKernel kernel, int steps, const std::vector<int>& restarts) {
  check_call(1, 1, steps, restarts);
  if (kernel == NsKernel::gram) return gram_work(steps, restarts).gemms();
  return 3 * steps;
}

}  // namespace dmuon
