#include "harness/verify/distributed_checks.hpp"

#include <random>

#include "core/cost/device_profile.hpp"
#include "core/model/model_yaml.hpp"
#include "core/plan/step_planner.hpp"
#include "core/io/yaml_reader.hpp"
#include "reference/model_step.hpp"
#include "reference/plan_interpreter.hpp"

namespace dmuon::verify {
namespace {

using ref::FlatParams;

FlatParams gaussian_params(const ModelSpec& model, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  FlatParams out;
  for (const ParamSpec& p : model.params) {
    Eigen::VectorXd v(p.numel());
    for (auto& x : v) x = normal(rng);
    out.push_back(std::move(v));
  }
  return out;
}

// The worst of per-parameter comparisons (the first failing one, else the largest error),
// named after the parameter it came from.
CaseResult worst_of(const std::string& name, const std::vector<std::pair<std::string, CaseResult>>& per_param) {
  CaseResult worst;
  worst.name = name;
  worst.passed = true;
  bool first = true;
  for (const auto& [param, r] : per_param) {
    const bool worse = first || (worst.passed && !r.passed) || (worst.passed == r.passed && r.error > worst.error);
    first = false;
    if (!worse) continue;
    worst = r;
    worst.name = name;
    worst.detail = "worst: " + param + (r.detail.empty() ? "" : ": " + r.detail);
  }
  if (per_param.empty()) worst.detail = "no parameter of this kind";
  return worst;
}

std::vector<CaseResult> run_case(const ModelSpec& model, const DistributedOptions& o, Strategy s,
                                 const std::string& preset, const std::string& name) {
  const Routing routing = route_parameters(model, {});
  const OptimizerConfig config = optimizer_preset(preset);
  StepPlanOptions plan_options;
  plan_options.plan.zero1_chunk_matrices = 5;  // several chunks, so the pipelining is exercised
  plan_options.plan.ddp_bucket_bytes = 4096;   // several buckets
  const StepPlan sp = plan_step(model, routing, config, s, o.mesh, CostModel(device_profile("h100-sxm")), plan_options);
  const FlatParams initial = gaussian_params(model, o.seed);
  ref::PlanInterpreter interpreter(sp.plan, model, routing, config, ref::Rounding::exact, initial);
  ref::ModelStep reference(model, routing, config, s == Strategy::adamw, initial, ref::Rounding::exact);
  for (int step = 1; step <= o.steps; ++step) {
    std::vector<FlatParams> grads;
    for (int r = 0; r < o.mesh.world(); ++r) grads.push_back(gaussian_params(model, o.seed + 1000u * step + r));
    interpreter.step(grads);
    reference.step(grads);
  }
  const std::vector<FlatParams> got = interpreter.params_after_forward();
  const bool bitwise = s == Strategy::dedicated && o.mesh.replicate == 1;
  std::vector<std::pair<std::string, CaseResult>> agree, muon, adamw;
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    const std::string& pname = model.params[p].name;
    const Eigen::MatrixXd want = reference.params()[p];
    const Eigen::MatrixXd rank0 = got[0][p];
    for (std::size_t r = 1; r < got.size(); ++r) {
      agree.emplace_back(pname + " on rank " + std::to_string(r), compare_bitwise(name, Eigen::MatrixXd(got[r][p]), rank0));
    }
    const bool is_muon = s != Strategy::adamw && routing.per_param[p] == Update::muon;
    auto& bucket = is_muon ? muon : adamw;
    bucket.emplace_back(pname, bitwise && is_muon ? compare_bitwise(name, rank0, want) : compare_rel(name, rank0, want, 1e-12));
  }
  std::vector<CaseResult> out;
  if (o.mesh.world() > 1) out.push_back(worst_of(name + "/ranks-agree", agree));
  if (!muon.empty()) out.push_back(worst_of(name + "/muon-vs-single-device", muon));
  out.push_back(worst_of(name + "/adamw-vs-single-device", adamw));
  return out;
}

}  // namespace

ModelSpec distributed_test_model() {
  const char* text = R"(name: verify-tiny
dtype: bf16
transformer: {hidden: 32, layers: 3, heads: 4, kv_heads: 2, ffn: 48, vocab: 100, qkv_bias: true,
              moe: {experts: 6, expert_ffn: 16, dense_layers: 2}}
)";
  return parse_model(YamlValue::load_string(text, "verify-tiny (built in)"));
}

std::vector<VerifyCase> distributed_cases(const DistributedOptions& options) {
  // Loaded once, up front: a bad --model file is an input error (exit 2), not a failed check.
  const ModelSpec model = options.model_file.empty() ? distributed_test_model() : load_model_file(options.model_file);
  std::vector<VerifyCase> cases;
  for (Strategy s : options.strategies) {
    for (const std::string& preset : options.presets) {
      const std::string name = "dist/" + std::string(to_string(s)) + "/mesh" + options.mesh.to_string() + "/" + preset;
      cases.push_back({name, [model, options, s, preset, name] { return run_case(model, options, s, preset, name); }});
    }
  }
  return cases;
}

}  // namespace dmuon::verify
