#include "reference/adamw_step.hpp"

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
  ++state.step;
  // The elementwise formulas live in elementwise_steps, shared with the plan interpreter.
  adamw_elementwise(W.data(), G.data(), state.exp_avg.data(), state.exp_avg_sq.data(), W.size(), state.step, cfg,
                    rounding);
}

}  // namespace dmuon::ref
