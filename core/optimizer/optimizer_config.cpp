#include "core/optimizer/optimizer_config.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.hpp"

namespace dmuon {
namespace {

void require(bool ok, const std::string& field, const std::string& why) {
  if (!ok) throw Error("optimizer." + field + ": " + why);
}

std::string show(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

void validate_ns(const NsConfig& ns) {
  require(ns.steps >= 1 && ns.steps < 100, "ns.steps",
          "must be in [1, 99], got " + std::to_string(ns.steps));
  require(!ns.schedule.empty(), "ns.coefficients", "must not be empty");
  for (std::size_t i = 0; i < ns.schedule.size(); ++i) {
    const auto& k = ns.schedule[i];
    require(std::isfinite(k.a) && std::isfinite(k.b) && std::isfinite(k.c), "ns.coefficients",
            "entry " + std::to_string(i) + " is not finite");
  }
  require(ns.eps > 0 && std::isfinite(ns.eps), "ns.eps", "must be > 0, got " + show(ns.eps));
  require(ns.norm_scale > 0 && std::isfinite(ns.norm_scale), "ns.norm_scale",
          "must be > 0, got " + show(ns.norm_scale));
  require(ns.products == NsProducts::fused || ns.variant == NsVariant::standard, "ns.products",
          "separate is defined for variant standard only (Gram NS rounds fused products)");
  int previous = 0;
  for (int r : ns.restarts) {
    require(r >= 1 && r < ns.steps, "ns.restarts",
            "iteration " + std::to_string(r) + " outside [1, steps-1] = [1, " +
                std::to_string(ns.steps - 1) + "]");
    require(r > previous, "ns.restarts", "must be strictly increasing");
    previous = r;
  }
}

}  // namespace

void OptimizerConfig::validate() const {
  const auto& m = muon;
  require(std::isfinite(m.lr) && m.lr >= 0, "lr", "must be >= 0, got " + show(m.lr));
  require(m.momentum >= 0 && m.momentum < 1, "momentum", "must be in [0, 1), got " + show(m.momentum));
  require(std::isfinite(m.weight_decay) && m.weight_decay >= 0, "weight_decay",
          "must be >= 0, got " + show(m.weight_decay));
  require(m.master_dtype == DType::fp32 || m.master_dtype == DType::fp64, "master_dtype",
          "must be fp32 or fp64");
  validate_ns(m.ns);
  const auto& a = adamw;
  require(std::isfinite(a.lr) && a.lr >= 0, "adamw.lr", "must be >= 0, got " + show(a.lr));
  require(a.beta1 >= 0 && a.beta1 < 1, "adamw.betas", "beta1 must be in [0, 1), got " + show(a.beta1));
  require(a.beta2 >= 0 && a.beta2 < 1, "adamw.betas", "beta2 must be in [0, 1), got " + show(a.beta2));
  require(a.eps > 0 && std::isfinite(a.eps), "adamw.eps", "must be > 0, got " + show(a.eps));
  require(std::isfinite(a.weight_decay) && a.weight_decay >= 0, "adamw.weight_decay",
          "must be >= 0, got " + show(a.weight_decay));
  require(a.master_dtype == DType::fp32 || a.master_dtype == DType::fp64, "adamw.master_dtype",
          "must be fp32 or fp64");
}

std::vector<std::string> preset_names() { return {"torch", "moonlight", "dmuon"}; }

OptimizerConfig optimizer_preset(std::string_view name, const std::string& what) {
  OptimizerConfig c;
  c.preset = std::string(name);
  auto& ns = c.muon.ns;
  if (name == "torch") {
    // torch/optim/_muon.py defaults; AdamW = torch.optim.AdamW defaults.
    ns.schedule_name = "keller";
    ns.schedule = named_schedule("keller", what);
    return c;  // the struct defaults are torch's
  }
  if (name == "moonlight") {
    // MoonshotAI/Moonlight examples/toy_train.py.
    c.muon.momentum_form = MomentumForm::sum;
    c.muon.adjust_lr = AdjustLr::match_rms_adamw;
    ns.schedule_name = "keller";
    ns.schedule = named_schedule("keller", what);
    ns.norm_mode = NormMode::add;
    c.adamw = {1e-3, 0.9, 0.95, 1e-8, 0.1, DType::fp32, NonfinitePolicy::error};
    return c;
  }
  if (name == "dmuon") {
    // X-Square-Robot/dmuon dmuon/optim/muon.py and newton_schulz.py.
    c.muon.lr = 0.02;
    c.muon.weight_decay = 0.0;
    c.muon.momentum_form = MomentumForm::sum;
    c.muon.adjust_lr = AdjustLr::match_rms_adamw;
    ns.variant = NsVariant::gram;
    ns.schedule_name = "polar-express";
    ns.schedule = named_schedule("polar-express", what);
    ns.steps = 5;
    ns.restarts = {2};
    ns.compute_dtype = DType::fp16;
    ns.normalize_dtype = DType::fp32;
    ns.norm_mode = NormMode::add;
    c.adamw = {1e-3, 0.9, 0.999, 1e-8, 0.01, DType::fp32, NonfinitePolicy::error};
    return c;
  }
  throw Error(what + ": unknown preset '" + std::string(name) + "' (known: torch, moonlight, dmuon)");
}

double adjusted_lr(const MuonConfig& config, long rows, long cols) {
  const double r = static_cast<double>(rows), c = static_cast<double>(cols);
  switch (config.adjust_lr) {
    case AdjustLr::original: return config.lr * std::sqrt(std::max(1.0, r / c));
    case AdjustLr::match_rms_adamw: return config.lr * 0.2 * std::sqrt(std::max(r, c));
    case AdjustLr::none: return config.lr;
  }
  return config.lr;
}

std::string_view to_string(MomentumForm v) { return v == MomentumForm::ema ? "ema" : "sum"; }
std::string_view to_string(NsVariant v) { return v == NsVariant::standard ? "standard" : "gram"; }
std::string_view to_string(NormMode v) { return v == NormMode::clamp ? "clamp" : "add"; }
std::string_view to_string(NonfinitePolicy v) { return v == NonfinitePolicy::error ? "error" : "skip"; }
std::string_view to_string(NsProducts v) { return v == NsProducts::fused ? "fused" : "separate"; }
std::string_view to_string(AdjustLr v) {
  switch (v) {
    case AdjustLr::original: return "original";
    case AdjustLr::match_rms_adamw: return "match_rms_adamw";
    case AdjustLr::none: return "none";
  }
  return "?";
}

MomentumForm parse_momentum_form(std::string_view s, const std::string& what) {
  if (s == "ema") return MomentumForm::ema;
  if (s == "sum") return MomentumForm::sum;
  throw Error(what + ": expected ema or sum, got '" + std::string(s) + "'");
}
NsVariant parse_ns_variant(std::string_view s, const std::string& what) {
  if (s == "standard") return NsVariant::standard;
  if (s == "gram") return NsVariant::gram;
  throw Error(what + ": expected standard or gram, got '" + std::string(s) + "'");
}
NormMode parse_norm_mode(std::string_view s, const std::string& what) {
  if (s == "clamp") return NormMode::clamp;
  if (s == "add") return NormMode::add;
  throw Error(what + ": expected clamp or add, got '" + std::string(s) + "'");
}
NonfinitePolicy parse_nonfinite_policy(std::string_view s, const std::string& what) {
  if (s == "error") return NonfinitePolicy::error;
  if (s == "skip") return NonfinitePolicy::skip;
  throw Error(what + ": expected error or skip, got '" + std::string(s) + "'");
}
NsProducts parse_ns_products(std::string_view s, const std::string& what) {
  if (s == "fused") return NsProducts::fused;
  if (s == "separate") return NsProducts::separate;
  throw Error(what + ": expected fused or separate, got '" + std::string(s) + "'");
}
AdjustLr parse_adjust_lr(std::string_view s, const std::string& what) {
  if (s == "original") return AdjustLr::original;
  if (s == "match_rms_adamw") return AdjustLr::match_rms_adamw;
  if (s == "none") return AdjustLr::none;
  throw Error(what + ": expected original, match_rms_adamw or none, got '" + std::string(s) + "'");
}

}  // namespace dmuon
