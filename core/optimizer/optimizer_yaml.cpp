#include "core/optimizer/optimizer_yaml.hpp"

#include <string>

#include "core/error.hpp"

namespace dmuon {
namespace {

void parse_coefficients(const YamlValue& v, NsConfig& ns, bool steps_given) {
  if (v.is_scalar()) {
    const std::string name = v.as_string();
    ns.schedule = parse_scalar(v, [](const std::string& s, const std::string& what) {
      return named_schedule(s, what);
    });
    ns.schedule_name = name;
    if (!steps_given) ns.steps = default_steps(name);
    return;
  }
  ns.schedule.clear();
  for (const auto& item : v.items()) {
    const auto abc = item.as_double_list();
    if (abc.size() != 3) item.fail("expected [a, b, c], got " + std::to_string(abc.size()) + " numbers");
    ns.schedule.push_back({abc[0], abc[1], abc[2]});
  }
  if (ns.schedule.empty()) v.fail("coefficient list is empty");
  ns.schedule_name = "explicit";
  if (!steps_given) ns.steps = static_cast<int>(ns.schedule.size());
}

}  // namespace

void parse_ns_config(const YamlValue& value, NsConfig& ns) {
  YamlMap m(value);
  if (auto v = m.find("variant")) ns.variant = parse_scalar(*v, parse_ns_variant);
  const auto steps = m.find("steps");
  if (steps) {
    const auto s = steps->as_int();
    if (s < 1 || s >= 100) steps->fail("must be in [1, 99], got " + std::to_string(s));
    ns.steps = static_cast<int>(s);
  }
  if (auto v = m.find("coefficients")) parse_coefficients(*v, ns, steps.has_value());
  if (auto v = m.find("restarts")) {
    ns.restarts.clear();
    for (const auto& r : v->items()) ns.restarts.push_back(r.as_int32());
  }
  if (auto v = m.find("dtype")) ns.compute_dtype = parse_scalar(*v, parse_dtype);
  if (auto v = m.find("normalize_dtype")) ns.normalize_dtype = parse_scalar(*v, parse_dtype);
  if (auto v = m.find("products")) ns.products = parse_scalar(*v, parse_ns_products);
  if (auto v = m.find("norm")) ns.norm_mode = parse_scalar(*v, parse_norm_mode);
  if (auto v = m.find("norm_scale")) ns.norm_scale = v->as_positive_double();
  if (auto v = m.find("eps")) ns.eps = v->as_positive_double();
  m.finish();
}

namespace {

void parse_adamw(const YamlValue& value, AdamWConfig& a) {
  YamlMap m(value);
  if (auto v = m.find("lr")) a.lr = v->as_nonnegative_double();
  if (auto v = m.find("betas")) {
    const auto betas = v->as_double_list();
    if (betas.size() != 2) v->fail("expected [beta1, beta2]");
    for (double b : betas) {
      if (b < 0 || b >= 1) v->fail("each beta must be in [0, 1)");
    }
    a.beta1 = betas[0];
    a.beta2 = betas[1];
  }
  if (auto v = m.find("eps")) a.eps = v->as_positive_double();
  if (auto v = m.find("weight_decay")) a.weight_decay = v->as_nonnegative_double();
  if (auto v = m.find("master_dtype")) a.master_dtype = parse_scalar(*v, parse_dtype);
  if (auto v = m.find("nonfinite")) a.nonfinite = parse_scalar(*v, parse_nonfinite_policy);
  m.finish();
}

}  // namespace

OptimizerConfig parse_optimizer(const YamlValue& value) {
  YamlMap m(value);
  OptimizerConfig c = optimizer_preset("torch");
  if (auto v = m.find("preset")) {
    c = parse_scalar(*v, [](const std::string& s, const std::string& what) {
      return optimizer_preset(s, what);
    });
  }
  auto& mu = c.muon;
  if (auto v = m.find("lr")) mu.lr = v->as_nonnegative_double();
  if (auto v = m.find("momentum")) {
    mu.momentum = v->as_double();
    if (mu.momentum < 0 || mu.momentum >= 1) v->fail("must be in [0, 1)");
  }
  if (auto v = m.find("momentum_form")) mu.momentum_form = parse_scalar(*v, parse_momentum_form);
  if (auto v = m.find("nesterov")) mu.nesterov = v->as_bool();
  if (auto v = m.find("weight_decay")) mu.weight_decay = v->as_nonnegative_double();
  if (auto v = m.find("adjust_lr")) mu.adjust_lr = parse_scalar(*v, parse_adjust_lr);
  if (auto v = m.find("master_dtype")) mu.master_dtype = parse_scalar(*v, parse_dtype);
  // One knob for both optimizers (read before `adamw:`, which may override it for AdamW).
  if (auto v = m.find("nonfinite")) mu.nonfinite = c.adamw.nonfinite = parse_scalar(*v, parse_nonfinite_policy);
  if (auto v = m.find("ns")) parse_ns_config(*v, mu.ns);
  if (auto v = m.find("adamw")) parse_adamw(*v, c.adamw);
  m.finish();
  try {
    c.validate();
  } catch (const Error& e) {
    value.fail_at(e.what());
  }
  return c;
}

}  // namespace dmuon
