#include "reference/muon_step.hpp"

#include <string>

#include "core/error.hpp"
#include "reference/elementwise_steps.hpp"

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

}  // namespace

void muon_step(Eigen::MatrixXd& W, const Eigen::MatrixXd& G, MuonState& state, const MuonConfig& cfg,
               Rounding rounding) {
  require_shape(G, "gradient", W);
  if (state.momentum.size() == 0) state.momentum = Eigen::MatrixXd::Zero(W.rows(), W.cols());
  require_shape(state.momentum, "momentum", W);

  // The elementwise parts are the ones the plan interpreter runs on shards (elementwise_steps).
  // Eigen matrices are contiguous, so the whole matrix is one element range.
  Eigen::MatrixXd u(W.rows(), W.cols());
  momentum_elementwise(G.data(), state.momentum.data(), u.data(), W.size(), cfg, rounding);
  ++state.step;
  const Eigen::MatrixXd O = newton_schulz(u, cfg.ns, rounding);
  muon_update_elementwise(W.data(), O.data(), W.size(), adjusted_lr(cfg, W.rows(), W.cols()), cfg, rounding);
}

}  // namespace dmuon::ref
