#include "reference/muon_step.hpp"

#include <string>

#include "core/error.hpp"
#include "reference/elementwise_steps.hpp"
#include "reference/nonfinite.hpp"

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
               Rounding rounding, std::string_view name) {
  require_shape(G, "gradient", W);
  if (state.momentum.size() == 0) state.momentum = Eigen::MatrixXd::Zero(W.rows(), W.cols());
  require_shape(state.momentum, "momentum", W);
  if (first_nonfinite(G.data(), G.size()) >= 0) {
    if (cfg.nonfinite == NonfinitePolicy::skip) return;
    require_finite(G, "muon_step", "gradient", name);
  }

  // The elementwise parts are the ones the plan interpreter runs on shards (elementwise_steps).
  // Eigen matrices are contiguous, so the whole matrix is one element range. Everything is
  // computed into copies and committed once known finite.
  Eigen::MatrixXd M = state.momentum, u(W.rows(), W.cols()), updated = W;
  momentum_elementwise(G.data(), M.data(), u.data(), W.size(), cfg, rounding);
  require_finite(M, "muon_step", "momentum", name);
  require_finite(u, "muon_step", "Newton-Schulz input", name);
  Eigen::MatrixXd O;
  try {
    O = newton_schulz(u, cfg.ns, rounding);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (muon_step of " + (name.empty() ? "the matrix" : "'" + std::string(name) + "'") + ")");
  }
  require_finite(O, "muon_step", "Newton-Schulz output", name);
  muon_update_elementwise(updated.data(), O.data(), W.size(), adjusted_lr(cfg, W.rows(), W.cols()), cfg, rounding);
  require_finite(updated, "muon_step", "updated weight", name);
  state.momentum = std::move(M);
  ++state.step;
  W = std::move(updated);
}

}  // namespace dmuon::ref
