// The elementwise parts of the Muon and AdamW steps over raw element ranges. They are the one
// implementation of those formulas: muon_step/adamw_step call them on whole matrices and the
// plan interpreter on shards and regions, so both produce bit-identical numbers for the same
// inputs whatever way the elements are split.
#pragma once
#include <cstdint>

#include "core/optimizer/optimizer_config.hpp"
#include "reference/rounding.hpp"

namespace dmuon::ref {

// ema: M = lerp(M, G, 1-mu), u = nesterov ? lerp(G, M, mu) : M
// sum: M = mu M + G,         u = nesterov ? G + mu M      : M
// Writes M in place and u to ns_input (n elements each). Rounding::emulate stores M and u in
// cfg.master_dtype.
void momentum_elementwise(const double* grad, double* momentum, double* ns_input, std::int64_t n,
                          const MuonConfig& cfg, Rounding rounding);

// W *= 1 - lr*wd (decay with the base lr), then W -= lr_adj * O. Rounding::emulate stores W in
// cfg.master_dtype after each of the two updates.
void muon_update_elementwise(double* param, const double* ns_output, std::int64_t n, double lr_adj,
                             const MuonConfig& cfg, Rounding rounding);

// torch.optim.AdamW for step number `step` (1 on the first step): W *= 1 - lr*wd;
// m = lerp(m, g, 1-b1); v = b2 v + (1-b2) g^2; W -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
// Rounding::emulate stores W (after each update), m and v in cfg.master_dtype.
void adamw_elementwise(double* param, const double* grad, double* m, double* v, std::int64_t n, long step,
                       const AdamWConfig& cfg, Rounding rounding);

}  // namespace dmuon::ref
