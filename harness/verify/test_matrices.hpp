// Deterministic inputs for the built-in suite.
#pragma once
#include <cstdint>

#include <Eigen/Dense>

namespace dmuon::verify {

// Standard normal entries from a seeded generator (same seed, same matrix, on every machine).
Eigen::MatrixXd gaussian_matrix(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed);
// U diag(s) V^T with random orthonormal U, V and singular values spread log-uniformly from
// 1 down to `smallest`: the ill-conditioned gradients that stress half-precision Gram NS.
Eigen::MatrixXd conditioned_matrix(Eigen::Index rows, Eigen::Index cols, double smallest,
                                   std::uint64_t seed);

}  // namespace dmuon::verify
