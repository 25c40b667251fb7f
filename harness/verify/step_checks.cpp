#include "harness/verify/step_checks.hpp"

#include <cmath>

#include "core/optimizer/optimizer_config.hpp"
#include "harness/verify/test_matrices.hpp"
#include "reference/adamw_step.hpp"
#include "reference/muon_step.hpp"

namespace dmuon::verify {
namespace {

using ref::Rounding;

// Rectangular m x n matrix with `d` on its diagonal, zeros elsewhere.
Eigen::MatrixXd diagonal(long rows, long cols, const std::vector<double>& d) {
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(rows, cols);
  for (std::size_t i = 0; i < d.size(); ++i) m(static_cast<long>(i), static_cast<long>(i)) = d[i];
  return m;
}

// Closed form of the Muon update direction for a diagonal input u: each diagonal entry goes
// through the composed scalar polynomial after the Frobenius normalisation.
std::vector<double> ns_of_diagonal(const std::vector<double>& u, const NsConfig& ns) {
  double fro2 = 0;
  for (double x : u) fro2 += x * x;
  const double fro = std::sqrt(fro2) * ns.norm_scale;
  const double n = ns.norm_mode == NormMode::clamp ? std::max(fro, ns.eps) : fro + ns.eps;
  std::vector<double> out;
  for (double x : u) out.push_back(ns.compose(x / n));
  return out;
}

// Element-wise Muon on diagonal entries, written from DESIGN.md's formulas, not the reference.
std::vector<double> muon_diagonal(std::vector<double> w, const std::vector<std::vector<double>>& grads,
                                  const MuonConfig& c, long rows, long cols) {
  std::vector<double> m(w.size(), 0.0);
  const double mu = c.momentum;
  for (const auto& g : grads) {
    std::vector<double> u(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (c.momentum_form == MomentumForm::ema) {
        m[i] = (1 - mu) * g[i] + mu * m[i];
        u[i] = c.nesterov ? mu * m[i] + (1 - mu) * g[i] : m[i];
      } else {
        m[i] = mu * m[i] + g[i];
        u[i] = c.nesterov ? g[i] + mu * m[i] : m[i];
      }
    }
    const auto o = ns_of_diagonal(u, c.ns);
    const double lr_adj = adjusted_lr(c, rows, cols);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = w[i] * (1 - c.lr * c.weight_decay) - lr_adj * o[i];
  }
  return w;
}

CaseResult diagonal_case(const std::string& preset, bool nesterov, long rows, long cols) {
  MuonConfig c = optimizer_preset(preset).muon;
  c.nesterov = nesterov;
  c.weight_decay = 0.05;  // non-zero so the decay order is exercised for every preset
  const std::vector<double> w0 = {0.5, -0.25, 0.125}, g1 = {1.0, -2.0, 0.5}, g2 = {-0.5, 1.5, 2.0};
  Eigen::MatrixXd w = diagonal(rows, cols, w0);
  ref::MuonState state;
  ref::muon_step(w, diagonal(rows, cols, g1), state, c, Rounding::exact);
  ref::muon_step(w, diagonal(rows, cols, g2), state, c, Rounding::exact);
  const auto expected = muon_diagonal(w0, {g1, g2}, c, rows, cols);
  const std::string name = "muon/" + preset + "/closed-form-diagonal-" + std::to_string(rows) + "x" +
                           std::to_string(cols) + (nesterov ? "/nesterov" : "/plain");
  return compare_rel(name, w, diagonal(rows, cols, expected), 1e-12);
}

// G = a b^T has one singular value, so exact NS returns compose(s/N) * a b^T / (|a||b|).
CaseResult rank_one_case(const std::string& preset) {
  MuonConfig c = optimizer_preset(preset).muon;
  const Eigen::MatrixXd a = gaussian_matrix(7, 1, 11), b = gaussian_matrix(12, 1, 12);
  const Eigen::MatrixXd g = a * b.transpose();
  const Eigen::MatrixXd w0 = gaussian_matrix(7, 12, 13);
  Eigen::MatrixXd w = w0;
  ref::MuonState state;
  ref::muon_step(w, g, state, c, Rounding::exact);
  const double s = a.norm() * b.norm();  // the only singular value of g
  const double scale = c.momentum_form == MomentumForm::ema
                           ? (c.nesterov ? (1 - c.momentum) * (1 + c.momentum) : 1 - c.momentum)
                           : (c.nesterov ? 1 + c.momentum : 1.0);
  const double u_norm = scale * s;
  const double n = c.ns.norm_mode == NormMode::clamp ? std::max(u_norm * c.ns.norm_scale, c.ns.eps)
                                                     : u_norm * c.ns.norm_scale + c.ns.eps;
  const Eigen::MatrixXd o = c.ns.compose(u_norm / n) * g / s;
  const Eigen::MatrixXd expected = w0 * (1 - c.lr * c.weight_decay) - adjusted_lr(c, 7, 12) * o;
  return compare_rel("muon/" + preset + "/closed-form-rank1-7x12", w, expected, 1e-12);
}

}  // namespace

std::vector<CaseResult> run_muon_closed_forms(const std::string& preset) {
  std::vector<CaseResult> out;
  for (bool nesterov : {true, false}) {
    out.push_back(diagonal_case(preset, nesterov, 3, 5));
    out.push_back(diagonal_case(preset, nesterov, 6, 3));
  }
  out.push_back(rank_one_case(preset));
  return out;
}

std::vector<CaseResult> run_adamw_closed_forms(const std::string& preset) {
  const AdamWConfig c = optimizer_preset(preset).adamw;
  const Eigen::MatrixXd w0 = gaussian_matrix(4, 3, 21);
  const Eigen::MatrixXd grads[3] = {gaussian_matrix(4, 3, 22), gaussian_matrix(4, 3, 23) * 1e-3,
                                    gaussian_matrix(4, 3, 24) * 10.0};
  Eigen::MatrixXd w = w0, expected = w0;
  ref::AdamWState state;
  for (int t = 1; t <= 3; ++t) {
    ref::adamw_step(w, grads[t - 1], state, c, Rounding::exact);
    Eigen::ArrayXXd m = Eigen::ArrayXXd::Zero(4, 3), v = Eigen::ArrayXXd::Zero(4, 3);
    for (int k = 1; k <= t; ++k) {
      m += (1 - c.beta1) * std::pow(c.beta1, t - k) * grads[k - 1].array();
      v += (1 - c.beta2) * std::pow(c.beta2, t - k) * grads[k - 1].array().square();
    }
    const double bc1 = 1 - std::pow(c.beta1, t), bc2 = 1 - std::pow(c.beta2, t);
    expected = (expected.array() * (1 - c.lr * c.weight_decay) -
                (c.lr / bc1) * m / (v.sqrt() / std::sqrt(bc2) + c.eps)).matrix();
  }
  return {compare_rel("adamw/" + preset + "/closed-form-3-steps", w, expected, 1e-12)};
}

}  // namespace dmuon::verify
