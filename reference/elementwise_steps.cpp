#include "reference/elementwise_steps.hpp"

#include <cmath>

namespace dmuon::ref {
namespace {

// What a stored value becomes: unchanged when exact, rounded to the master dtype when emulating.
struct Store {
  Rounding rounding;
  DType dtype;
  double operator()(double x) const { return rounding == Rounding::emulate ? round_to(x, dtype) : x; }
};

}  // namespace

void momentum_elementwise(const double* grad, double* momentum, double* ns_input, std::int64_t n,
                          const MuonConfig& cfg, Rounding rounding) {
  const Store store{rounding, cfg.master_dtype};
  const double mu = cfg.momentum;
  const double one_minus_mu = 1.0 - mu;
  // The form and Nesterov switches are hoisted out of the loop; each branch is the formula
  // written once, with the stored (rounded) M feeding u as on the GPU.
  if (cfg.momentum_form == MomentumForm::ema) {
    for (std::int64_t i = 0; i < n; ++i) {
      const double g = grad[i];
      const double M = store(momentum[i] + one_minus_mu * (g - momentum[i]));  // lerp(M, g, 1-mu)
      momentum[i] = M;
      ns_input[i] = store(cfg.nesterov ? g + mu * (M - g) : M);  // lerp(g, M, mu)
    }
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const double g = grad[i];
    const double M = store(mu * momentum[i] + g);
    momentum[i] = M;
    ns_input[i] = store(cfg.nesterov ? g + mu * M : M);
  }
}

void muon_update_elementwise(double* param, const double* ns_output, std::int64_t n, double lr_adj,
                             const MuonConfig& cfg, Rounding rounding) {
  const Store store{rounding, cfg.master_dtype};
  // Decoupled decay first and with the base lr (torch, Moonlight, DMuon), not the adjusted lr.
  const double decay = 1.0 - cfg.lr * cfg.weight_decay;
  for (std::int64_t i = 0; i < n; ++i) {
    const double decayed = store(param[i] * decay);
    param[i] = store(decayed - lr_adj * ns_output[i]);
  }
}

void adamw_elementwise(double* param, const double* grad, double* m, double* v, std::int64_t n, long step,
                       const AdamWConfig& cfg, Rounding rounding) {
  const Store store{rounding, cfg.master_dtype};
  const double decay = 1.0 - cfg.lr * cfg.weight_decay;
  const double t = static_cast<double>(step);
  const double bias_correction1 = 1.0 - std::pow(cfg.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(cfg.beta2, t);
  const double step_size = cfg.lr / bias_correction1;
  const double sqrt_bias_correction2 = std::sqrt(bias_correction2);
  for (std::int64_t i = 0; i < n; ++i) {
    const double g = grad[i];
    const double decayed = store(param[i] * decay);
    m[i] = store(m[i] + (1.0 - cfg.beta1) * (g - m[i]));  // lerp(m, g, 1-b1), as torch writes it
    v[i] = store(cfg.beta2 * v[i] + (1.0 - cfg.beta2) * (g * g));
    const double denom = std::sqrt(v[i]) / sqrt_bias_correction2 + cfg.eps;
    param[i] = store(decayed - step_size * (m[i] / denom));
  }
}

}  // namespace dmuon::ref
