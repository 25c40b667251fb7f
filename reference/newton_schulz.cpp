#include "reference/newton_schulz.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include <Eigen/SVD>

#include "core/error.hpp"
#include "core/plan/ns_sharding.hpp"
#include "reference/rounding.hpp"

namespace dmuon::ref {
namespace {

// Rounds a freshly computed value to the dtype the GPU path stores it in; a no-op when exact.
// Every call site is one store of one kernel output (a fused epilogue rounds its sum once).
struct Store {
  Rounding rounding;
  DType dtype;
  void operator()(Eigen::MatrixXd& m) const {
    if (rounding == Rounding::emulate) round_in_place(m, dtype);
  }
  double operator()(double x) const { return rounding == Rounding::emulate ? round_to(x, dtype) : x; }
};

// Column blocks of the wide orientation X = [X_0 ... X_{k-1}] (one block: single-device NS).
// Every product that needs all columns is a sum over blocks in block order: the all-reduce of
// a sharded call (core/plan/ns_sharding.hpp). With one block each sum is the single product.
using Shards = std::vector<Eigen::MatrixXd>;

// A B for m x m operands: whole (blocks = 1) or, for a call that splits its products over
// `blocks` members, as the column blocks D[:, J_i] = A B[:, J_i] each member computes.
struct Products {
  int blocks = 1;
  Eigen::MatrixXd operator()(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B) const {
    if (blocks <= 1) return A * B;
    Eigen::MatrixXd D(A.rows(), B.cols());
    for (int i = 0; i < blocks; ++i) {
      const auto [begin, end] = ns_product_columns(B.cols(), blocks, i);
      D.middleCols(begin, end - begin) = A * B.middleCols(begin, end - begin);
    }
    return D;
  }
};

// X X^T summed over the blocks, stored.
Eigen::MatrixXd gram(const Shards& X, const Store& store) {
  Eigen::MatrixXd A = X.front() * X.front().transpose();
  for (std::size_t j = 1; j < X.size(); ++j) A += X[j] * X[j].transpose();
  store(A);
  return A;
}

// ||X||_F from the blocks' sums of squares (the sharded call's scalar all-reduce).
double frobenius_norm(const Shards& X) {
  double squares = 0;
  for (const auto& x : X) squares += x.squaredNorm();
  const double plain = std::sqrt(squares);
  bool zero = true;
  for (const auto& x : X) zero = zero && x.isZero(0.0);
  // The plain sum of squares overflows above ~1e154 and underflows below ~1e-162 (a huge
  // gradient would become a zero update, a subnormal one an unnormalised one); Eigen's scaled
  // norm is exact there. Only then, so every ordinary input keeps its bits.
  if (std::isfinite(plain) && (plain != 0.0 || zero)) return plain;
  double scale = 0;
  for (const auto& x : X) scale = std::max(scale, x.stableNorm());
  if (scale == 0.0) return 0.0;
  double scaled = 0;
  for (const auto& x : X) scaled += (x.stableNorm() / scale) * (x.stableNorm() / scale);
  return scale * std::sqrt(scaled);
}

// X / normaliser(||X||_F). The GPU reads G in normalize_dtype, reduces the squared norm into a
// wide accumulator (double here), keeps the scalars and the quotient in normalize_dtype, then
// casts the quotient to compute_dtype for the iteration.
void normalise(Shards& X, const NsConfig& ns, Rounding rounding) {
  const Store norm_store{rounding, ns.normalize_dtype};
  for (auto& x : X) norm_store(x);
  const double frobenius = norm_store(frobenius_norm(X));
  // A zero matrix stays zero (0 / eps would be fine too, but this cannot produce 0/0 even
  // when eps rounds to zero in a narrow normalize_dtype).
  if (frobenius == 0.0) return;
  const double normaliser = norm_store(ns_normaliser(frobenius, ns));
  // fp16 ends at 65504: dividing by an infinite normaliser would return a zero matrix, i.e. a
  // silently skipped update.
  if (!std::isfinite(normaliser)) {
    throw Error("newton_schulz: the Frobenius norm " + std::to_string(frobenius) + " of the input overflows " +
                "normalize_dtype " + std::string(to_string(ns.normalize_dtype)) + "; use a wider normalize_dtype");
  }
  for (auto& x : X) {
    x /= normaliser;
    norm_store(x);
    Store{rounding, ns.compute_dtype}(x);
  }
}

// `m` rounded to the compute dtype as a fresh matrix (one op's stored output).
Eigen::MatrixXd stored(Eigen::MatrixXd m, const Store& store) {
  store(m);
  return m;
}

// A = X X^T; B = b A + c A A; X = a X + B X. fused: B and the new X are single fused-epilogue
// stores. separate: each of b*A, c*A, (c*A) A, their sum, a*X, B X and their sum is stored.
void standard_iterations(Shards& X, const NsConfig& ns, const Store& store, const Products& mul) {
  const bool fused = ns.products == NsProducts::fused;
  for (int t = 0; t < ns.steps; ++t) {
    const NsCoefficient k = ns.coefficient(t);
    const Eigen::MatrixXd A = gram(X, store);
    Eigen::MatrixXd B = fused ? Eigen::MatrixXd(k.b * A + k.c * mul(A, A))
                              : Eigen::MatrixXd(stored(k.b * A, store) + stored(mul(stored(k.c * A, store), A), store));
    store(B);
    for (auto& x : X) {
      Eigen::MatrixXd next = fused ? Eigen::MatrixXd(k.a * x + B * x)  // a fresh matrix: no aliasing with x
                                   : Eigen::MatrixXd(stored(k.a * x, store) + stored(B * x, store));
      store(next);
      x = std::move(next);
    }
  }
}

// Every block times Q (a restart's fold, and the result), stored.
void left_multiply(const Eigen::MatrixXd& Q, Shards& X, const Store& store) {
  for (auto& x : X) {
    Eigen::MatrixXd next = Q * x;
    store(next);
    x = std::move(next);
  }
}

bool restarts_before(const NsConfig& ns, int t) {
  return t != 0 && std::find(ns.restarts.begin(), ns.restarts.end(), t) != ns.restarts.end();
}

// Gram NS (kernel-anchors 1.2): iterate on R = X X^T (m x m) and accumulate Q, a polynomial in
// R, so that the result is Q X. A restart folds Q into X and recomputes R from it, which
// resets the rounding error R has collected. The a*I terms ride in epilogues (Q Z + a Q, ...).
void gram_iterations(Shards& X, const NsConfig& ns, const Store& store, const Products& mul) {
  const Eigen::Index m = X.front().rows();
  const int last = ns.steps - 1;
  Eigen::MatrixXd R = gram(X, store);
  std::optional<Eigen::MatrixXd> Q;  // empty: the accumulator is still the identity
  for (int t = 0; t < ns.steps; ++t) {
    const NsCoefficient k = ns.coefficient(t);
    if (restarts_before(ns, t) && Q) {
      left_multiply(*Q, X, store);
      R = gram(X, store);
      Q.reset();
    }
    Eigen::MatrixXd Z = k.b * R + k.c * mul(R, R);
    store(Z);
    // DMuon's order and roundings: Q = addmm(Q, Z, Q, beta=a) is Z Q + a Q in one epilogue (Z and Q
    // commute only in exact arithmetic), and the first Q = Z + a*I adds a tensor a*I that torch
    // stores in the compute dtype, so the diagonal gets a rounded to it, then the sum is rounded.
    Eigen::MatrixXd next_Q =
        Q ? Eigen::MatrixXd(mul(Z, *Q) + k.a * *Q) : Eigen::MatrixXd(Z + store(k.a) * Eigen::MatrixXd::Identity(m, m));
    store(next_Q);
    Q = std::move(next_Q);
    // R is only needed by the next iteration, and a restart recomputes it from X anyway.
    if (t < last && !restarts_before(ns, t + 1)) {
      Eigen::MatrixXd RZ = mul(R, Z) + k.a * R;
      store(RZ);
      Eigen::MatrixXd next_R = mul(Z, RZ) + k.a * RZ;
      store(next_R);
      R = std::move(next_R);
    }
  }
  if (Q) left_multiply(*Q, X, store);  // no Q: zero steps
}

// The whole call on the blocks, in place; `mul` computes its m x m products.
void iterate(Shards& X, const NsConfig& ns, Rounding rounding, const Products& mul = {}) {
  normalise(X, ns, rounding);  // a zero input stays zero through the iterations
  const Store store{rounding, ns.compute_dtype};
  if (ns.variant == NsVariant::gram) {
    gram_iterations(X, ns, store, mul);
  } else {
    standard_iterations(X, ns, store, mul);
  }
}

}  // namespace

double ns_normaliser(double frobenius, const NsConfig& ns) {
  const double scaled = frobenius * ns.norm_scale;
  return ns.norm_mode == NormMode::clamp ? std::max(scaled, ns.eps) : scaled + ns.eps;
}

Eigen::MatrixXd newton_schulz(const Eigen::MatrixXd& G, const NsConfig& ns, Rounding rounding) {
  if (G.size() == 0) return G;
  // Work on the wide orientation so the Gram matrices are the small m x m side.
  const bool transposed = G.rows() > G.cols();
  Shards X{transposed ? Eigen::MatrixXd(G.transpose()) : G};
  iterate(X, ns, rounding);
  if (transposed) return X.front().transpose();
  return X.front();
}

std::vector<Eigen::MatrixXd> sharded_newton_schulz(std::vector<Eigen::MatrixXd> shards, const NsConfig& ns,
                                                   Rounding rounding, bool split_products) {
  if (shards.empty()) throw Error("sharded_newton_schulz: no shards");
  for (const auto& x : shards) {
    if (x.rows() != shards.front().rows() || x.cols() == 0) {
      throw Error("sharded_newton_schulz: every shard needs " + std::to_string(shards.front().rows()) +
                  " rows and at least one column");
    }
  }
  const int k = static_cast<int>(shards.size());
  const Eigen::Index m = shards.front().rows();
  if (split_products && !ns_shardable(m, k)) {
    throw Error("sharded_newton_schulz: " + std::to_string(m) + " product columns cannot give each of " +
                std::to_string(k) + " members one");
  }
  iterate(shards, ns, rounding, Products{split_products ? k : 1});
  return shards;
}

Eigen::MatrixXd polar_factor(const Eigen::MatrixXd& G) {
  if (G.size() == 0) return G;
  const Eigen::BDCSVD<Eigen::MatrixXd> svd(G, Eigen::ComputeThinU | Eigen::ComputeThinV);
  return svd.matrixU() * svd.matrixV().transpose();
}

Eigen::MatrixXd predicted_ns_output(const Eigen::MatrixXd& G, const NsConfig& ns) {
  if (G.size() == 0) return G;
  const Eigen::BDCSVD<Eigen::MatrixXd> svd(G, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const double normaliser = ns_normaliser(G.norm(), ns);
  const Eigen::VectorXd mapped = svd.singularValues().unaryExpr(
      [&](double s) { return ns.compose(s / normaliser); });
  return svd.matrixU() * mapped.asDiagonal() * svd.matrixV().transpose();
}

}  // namespace dmuon::ref
