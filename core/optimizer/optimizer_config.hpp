// Every knob of the Muon + AdamW step (DESIGN.md "Exact semantics"), presets and validation.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/optimizer/coefficients.hpp"
#include "core/optimizer/dtype.hpp"

namespace dmuon {

// ema: M = lerp(M, g, 1-mu), nesterov u = lerp(g, M, mu)   (torch.optim.Muon, Keller)
// sum: M = mu*M + g,         nesterov u = g + mu*M         (Moonlight, DMuon)
enum class MomentumForm { ema, sum };
enum class NsVariant { standard, gram };
// clamp: X / max(||X||_F * scale, eps)  (torch)      add: X / (||X||_F * scale + eps)  (Keller, DMuon)
enum class NormMode { clamp, add };
// original: sqrt(max(1, rows/cols))   match_rms_adamw: 0.2*sqrt(max(rows, cols))   none: 1
enum class AdjustLr { original, match_rms_adamw, none };
// A gradient with a NaN or an infinity. error: the step throws dmuon::Error naming the matrix or
// parameter; skip: that parameter keeps its weights and optimizer state (its step count too) for
// this step, as torch's GradScaler skips a step on inf/NaN, and the others are updated. A
// non-finite value produced from finite gradients (an overflowing momentum, moment or weight) is
// an error under both policies: skipping would hide it forever.
enum class NonfinitePolicy { error, skip };
// Where standard NS rounds to the compute dtype. fused: B = b A + c A A and X = a X + B X are one
// GEMM epilogue each, rounded once (torch.optim.Muon's addmm). separate: every scalar product,
// matrix product and sum is an op of its own, rounded after each (DMuon's direct_newton_schulz,
// `b * A + c * A @ A` and `a * X + B @ X`, which Python evaluates as b*A, (c*A) @ A, +, a*X, B@X, +).
// Gram NS is always fused.
enum class NsProducts { fused, separate };

struct NsConfig {
  NsVariant variant = NsVariant::standard;
  std::string schedule_name = "keller";  // "explicit" for a user list
  std::vector<NsCoefficient> schedule;   // steps past the end repeat the last entry
  int steps = 5;
  std::vector<int> restarts;             // Gram only: restart before these iterations (0-based)
  DType compute_dtype = DType::bf16;     // where X, A, B (Gram: R, Z, Q) are stored
  NsProducts products = NsProducts::fused;  // standard only: where the iteration rounds
  DType normalize_dtype = DType::bf16;   // precision of the Frobenius normalisation
  NormMode norm_mode = NormMode::clamp;
  double norm_scale = 1.0;               // safety factor on the norm (dion 1.02, PolarExpress 1.01)
  double eps = 1e-7;

  NsCoefficient coefficient(int step) const { return coefficient_at(schedule, step); }
  // The scalar map the whole iteration applies to each normalised singular value x:
  // p_steps(...p_1(x)). In exact arithmetic standard and Gram NS (any restarts) both equal it.
  double compose(double x) const {
    for (int t = 0; t < steps; ++t) x = coefficient(t).apply(x);
    return x;
  }
};

struct MuonConfig {
  double lr = 1e-3;
  double momentum = 0.95;
  double weight_decay = 0.1;
  bool nesterov = true;
  MomentumForm momentum_form = MomentumForm::ema;
  AdjustLr adjust_lr = AdjustLr::original;
  DType master_dtype = DType::fp32;  // weights and momentum are stored in this precision
  NonfinitePolicy nonfinite = NonfinitePolicy::error;
  NsConfig ns;
};

struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
  DType master_dtype = DType::fp32;
  NonfinitePolicy nonfinite = NonfinitePolicy::error;
};

struct OptimizerConfig {
  std::string preset = "torch";
  MuonConfig muon;
  AdamWConfig adamw;

  // Throws dmuon::Error naming the first invalid field (as `optimizer.<field>`).
  void validate() const;
};

std::vector<std::string> preset_names();
// torch: torch.optim.Muon + torch.optim.AdamW defaults; moonlight: Moonlight's toy_train.py;
// dmuon: DMuon (sum momentum, Polar Express /1.05, Gram NS in fp16, 0.2*sqrt(max) scale).
// Throws dmuon::Error naming `what` for an unknown preset.
OptimizerConfig optimizer_preset(std::string_view name, const std::string& what = "optimizer.preset");

// lr multiplier for a rows x cols matrix.
double adjusted_lr(const MuonConfig& config, long rows, long cols);

std::string_view to_string(MomentumForm v);
std::string_view to_string(NsVariant v);
std::string_view to_string(NormMode v);
std::string_view to_string(AdjustLr v);
std::string_view to_string(NonfinitePolicy v);
std::string_view to_string(NsProducts v);
MomentumForm parse_momentum_form(std::string_view s, const std::string& what);
NsVariant parse_ns_variant(std::string_view s, const std::string& what);
NormMode parse_norm_mode(std::string_view s, const std::string& what);
AdjustLr parse_adjust_lr(std::string_view s, const std::string& what);
NonfinitePolicy parse_nonfinite_policy(std::string_view s, const std::string& what);
NsProducts parse_ns_products(std::string_view s, const std::string& what);

}  // namespace dmuon
