#include "reference/adamw_step.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "reference/rounding.hpp"

namespace dmuon::ref {
namespace {

std::string shape_of(const Eigen::MatrixXd& m) {
  return std::to_string(m.rows()) + "x" + std::to_string(m.cols());
}

void require_shape(const Eigen::MatrixXd& m, const char* name, const Eigen::MatrixXd& W) {
  if (m.rows() != W.rows() || m.cols() != W.cols()) {
    throw Error(std::string("adamw_step: ") + name + " shape " + shape_of(m) +
                " does not match weight shape " + shape_of(W));
  }
}

// Moments start as zeros on first use; afterwards they must keep W's shape.
void init_or_check(Eigen::MatrixXd& m, const char* name, const Eigen::MatrixXd& W) {
  if (m.size() == 0) m = Eigen::MatrixXd::Zero(W.rows(), W.cols());
  require_shape(m, name, W);
}

}  // namespace

void adamw_step(Eigen::MatrixXd& W, const Eigen::MatrixXd& G, AdamWState& state,
                const AdamWConfig& cfg, Rounding rounding) {
  require_shape(G, "gradient", W);
  init_or_check(state.exp_avg, "exp_avg", W);
  init_or_check(state.exp_avg_sq, "exp_avg_sq", W);
  const auto store = [&](Eigen::MatrixXd& m) {
    if (rounding == Rounding::emulate) round_in_place(m, cfg.master_dtype);
  };
  Eigen::MatrixXd& m = state.exp_avg;
  Eigen::MatrixXd& v = state.exp_avg_sq;
  ++state.step;

  W *= 1.0 - cfg.lr * cfg.weight_decay;
  store(W);
  m += (1.0 - cfg.beta1) * (G - m);  // lerp(m, g, 1-b1), as torch writes it
  store(m);
  v = cfg.beta2 * v + (1.0 - cfg.beta2) * G.cwiseProduct(G);
  store(v);

  const double t = static_cast<double>(state.step);
  const double bias_correction1 = 1.0 - std::pow(cfg.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(cfg.beta2, t);
  const double step_size = cfg.lr / bias_correction1;
  const Eigen::ArrayXXd denom = v.array().sqrt() / std::sqrt(bias_correction2) + cfg.eps;
  W -= step_size * (m.array() / denom).matrix();
  store(W);
}

}  // namespace dmuon::ref
