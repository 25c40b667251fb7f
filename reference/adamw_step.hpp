// One AdamW step on one tensor (as a matrix), in double: torch.optim.AdamW semantics.
#pragma once
#include <string_view>

#include <Eigen/Core>

#include "core/optimizer/optimizer_config.hpp"
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
// A NaN or infinity in G: cfg.nonfinite = error throws dmuon::Error naming `name`; skip returns
// with W and the state untouched (t is not advanced). A non-finite moment or weight from finite
// inputs (g^2 overflowing exp_avg_sq) throws under both policies; nothing is written then.
void adamw_step(Eigen::MatrixXd& W, const Eigen::MatrixXd& G, AdamWState& state,
                const AdamWConfig& cfg, Rounding rounding, std::string_view name = {});

}  // namespace dmuon::ref
