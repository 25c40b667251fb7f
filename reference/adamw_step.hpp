// One AdamW step on one tensor (as a matrix), in double: torch.optim.AdamW semantics.
#pragma once
#include <Eigen/Core>

#include "core/optimizer_config.hpp"
#include "reference/rounding.hpp"

namespace dmuon::ref {

struct AdamWState {
  Eigen::MatrixXd exp_avg, exp_avg_sq;  // empty until the first step, then zeros-initialised
  long step = 0;                        // steps taken (t of the bias corrections)
};

// step += 1; W *= 1 - lr*wd; m = lerp(m, g, 1-b1); v = b2 v + (1-b2) g^2;
// W -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
// Rounding::emulate stores m, v and W (after each of its two updates) in cfg.master_dtype.
// Throws dmuon::Error when G or the state does not have W's shape.
void adamw_step(Eigen::MatrixXd& W, const Eigen::MatrixXd& G, AdamWState& state,
                const AdamWConfig& cfg, Rounding rounding);

}  // namespace dmuon::ref
