#include "reference/muon_step.hpp"

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
    throw Error(std::string("muon_step: ") + name + " shape " + shape_of(m) +
                " does not match weight shape " + shape_of(W));
  }
}

// Updates the momentum in place and returns the Newton-Schulz input u.
Eigen::MatrixXd momentum_update(Eigen::MatrixXd& M, const Eigen::MatrixXd& G, const MuonConfig& cfg,
                                Rounding rounding) {
  const double mu = cfg.momentum;
  const auto store = [&](Eigen::MatrixXd& m) {
    if (rounding == Rounding::emulate) round_in_place(m, cfg.master_dtype);
  };
  Eigen::MatrixXd u;
  if (cfg.momentum_form == MomentumForm::ema) {
    M += (1.0 - mu) * (G - M);  // lerp(M, G, 1-mu)
    store(M);
    if (cfg.nesterov) u = G + mu * (M - G);  // lerp(G, M, mu)
    else u = M;
  } else {
    M = mu * M + G;
    store(M);
    if (cfg.nesterov) u = G + mu * M;
    else u = M;
  }
  store(u);
  return u;
}

}  // namespace

void muon_step(Eigen::MatrixXd& W, const Eigen::MatrixXd& G, MuonState& state, const MuonConfig& cfg,
               Rounding rounding) {
  require_shape(G, "gradient", W);
  if (state.momentum.size() == 0) state.momentum = Eigen::MatrixXd::Zero(W.rows(), W.cols());
  require_shape(state.momentum, "momentum", W);

  const Eigen::MatrixXd u = momentum_update(state.momentum, G, cfg, rounding);
  ++state.step;
  const Eigen::MatrixXd O = newton_schulz(u, cfg.ns, rounding);

  const auto store = [&](Eigen::MatrixXd& m) {
    if (rounding == Rounding::emulate) round_in_place(m, cfg.master_dtype);
  };
  // Decoupled decay first and with the base lr (torch, Moonlight, DMuon), not the adjusted lr.
  W *= 1.0 - cfg.lr * cfg.weight_decay;
  store(W);
  W -= adjusted_lr(cfg, W.rows(), W.cols()) * O;
  store(W);
}

}  // namespace dmuon::ref
