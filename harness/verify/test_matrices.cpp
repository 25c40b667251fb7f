#include "harness/verify/test_matrices.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace dmuon::verify {

Eigen::MatrixXd gaussian_matrix(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  // Box-Muller on mt19937_64 words: std::normal_distribution differs between standard libraries.
  std::mt19937_64 gen(seed);
  const double two_pi = 6.283185307179586;
  auto uniform = [&] { return (static_cast<double>(gen() >> 11) + 0.5) * 0x1.0p-53; };
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    m.data()[i] = std::sqrt(-2.0 * std::log(uniform())) * std::cos(two_pi * uniform());
  }
  return m;
}

Eigen::MatrixXd conditioned_matrix(Eigen::Index rows, Eigen::Index cols, double smallest,
                                   std::uint64_t seed) {
  const Eigen::Index k = std::min(rows, cols);
  Eigen::HouseholderQR<Eigen::MatrixXd> qu(gaussian_matrix(rows, k, seed));
  Eigen::HouseholderQR<Eigen::MatrixXd> qv(gaussian_matrix(cols, k, seed + 1));
  const Eigen::MatrixXd u = qu.householderQ() * Eigen::MatrixXd::Identity(rows, k);
  const Eigen::MatrixXd v = qv.householderQ() * Eigen::MatrixXd::Identity(cols, k);
  Eigen::VectorXd s(k);
  for (Eigen::Index i = 0; i < k; ++i) {
    const double t = k > 1 ? static_cast<double>(i) / static_cast<double>(k - 1) : 0.0;
    s(i) = std::pow(smallest, t);
  }
  return u * s.asDiagonal() * v.transpose();
}

}  // namespace dmuon::verify
