// Newton-Schulz orthogonalisation in double precision: standard and Gram variants, exact or
// with the GPU's storage roundings emulated, plus SVD-based predictions to check against.
#pragma once
#include <vector>

#include <Eigen/Core>

#include "core/optimizer/optimizer_config.hpp"
#include "reference/rounding.hpp"

namespace dmuon::ref {

// Rounding::emulate: normalisation scalars and quotient in ns.normalize_dtype, every stored
// iteration product in ns.compute_dtype; the result is compute_dtype-valued.
// Transposes to wide (m <= n), divides by the configured Frobenius normaliser, runs ns.steps
// iterations of ns.variant with ns.coefficient(t), transposes back. Gram runs even when the
// matrix is square: whether to fall back to standard is the caller's decision.
// Zero input gives zero output. Throws dmuon::Error when the input's norm does not fit
// normalize_dtype (fp16 beyond 65504) under Rounding::emulate.
Eigen::MatrixXd newton_schulz(const Eigen::MatrixXd& G, const NsConfig& ns, Rounding rounding);

// The same call run as sharded over k GPUs (core/plan/ns_sharding.hpp): `shards` are the column
// blocks [X_0 ... X_{k-1}] of the already wide (m <= n) input, every one m rows; returns the
// output's blocks. Every sum over columns (the squared norm, each X X^T) is taken block by
// block in block order, as the all-reduce does; with one shard this IS newton_schulz's
// iteration. split_products (Op::ns_product_begin): every m x m product is computed in k column
// blocks (ns_product_columns), block i as member i computes it; the all-gathers move those bits
// unchanged, so they are no step here. Throws dmuon::Error for no shard, ragged rows, an empty
// shard, or a split that leaves a member without a product column.
std::vector<Eigen::MatrixXd> sharded_newton_schulz(std::vector<Eigen::MatrixXd> shards, const NsConfig& ns,
                                                   Rounding rounding, bool split_products = false);

// The divisor newton_schulz applies to the (transposed) input with Frobenius norm
// `frobenius`: clamp: max(frobenius * scale, eps); add: frobenius * scale + eps.
double ns_normaliser(double frobenius, const NsConfig& ns);

// U V^T of the thin SVD G = U S V^T (the polar factor; not unique for rank-deficient G).
Eigen::MatrixXd polar_factor(const Eigen::MatrixXd& G);

// U diag(ns.compose(s_i / normaliser)) V^T: what exact newton_schulz must return.
Eigen::MatrixXd predicted_ns_output(const Eigen::MatrixXd& G, const NsConfig& ns);

}  // namespace dmuon::ref
