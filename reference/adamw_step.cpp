#include "reference/adamw_step.hpp"

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
                const AdamWConfig& cfg, Rounding rounding, std::string_view name) {
  require_shape(G, "gradient", W);
  init_or_check(state.exp_avg, "exp_avg", W);
  init_or_check(state.exp_avg_sq, "exp_avg_sq", W);
  if (first_nonfinite(G.data(), G.size()) >= 0) {
    if (cfg.nonfinite == NonfinitePolicy::skip) return;
    require_finite(G, "adamw_step", "gradient", name);
  }
  // The elementwise formulas live in elementwise_steps, shared with the plan interpreter. They
  // run on copies, committed once every value is known finite.
  Eigen::MatrixXd updated = W, m = state.exp_avg, v = state.exp_avg_sq;
  adamw_elementwise(updated.data(), G.data(), m.data(), v.data(), W.size(), state.step + 1, cfg, rounding);
  require_finite(m, "adamw_step", "exp_avg", name);
  require_finite(v, "adamw_step", "exp_avg_sq", name);
  require_finite(updated, "adamw_step", "updated weight", name);
  ++state.step;
  state.exp_avg = std::move(m);
  state.exp_avg_sq = std::move(v);
  W = std::move(updated);
}

}  // namespace dmuon::ref
