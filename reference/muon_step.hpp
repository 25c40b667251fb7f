// One Muon step on one matrix, in double (DESIGN.md "Exact semantics"): momentum, Newton-Schulz,
// decoupled weight decay with the base lr, then the shape-adjusted update.
#pragma once
#include <string_view>

#include <Eigen/Core>

#include "core/optimizer/optimizer_config.hpp"
#include "reference/newton_schulz.hpp"

namespace dmuon::ref {

struct MuonState {
  Eigen::MatrixXd momentum;  // empty until the first step, then zeros-initialised
  long step = 0;             // steps taken
};

// ema: M = lerp(M, G, 1-mu), u = nesterov ? lerp(G, M, mu) : M
// sum: M = mu M + G,         u = nesterov ? G + mu M      : M
// O = newton_schulz(u); W *= 1 - lr*wd; W -= adjusted_lr(cfg, rows, cols) * O.
// Rounding::emulate stores M, u and W (after each of its two updates) in cfg.master_dtype and
// runs Newton-Schulz with its GPU roundings. Throws dmuon::Error when G or the momentum does
// not have W's shape.
// A NaN or infinity in G: cfg.nonfinite = error throws dmuon::Error naming `name` and the
// element; skip returns with W and the state untouched (the step is not counted). A non-finite
// momentum, NS output or weight from finite inputs (overflow) throws under both policies. W and
// the state are only written when the whole step is finite.
void muon_step(Eigen::MatrixXd& W, const Eigen::MatrixXd& G, MuonState& state, const MuonConfig& cfg,
               Rounding rounding, std::string_view name = {});

}  // namespace dmuon::ref
