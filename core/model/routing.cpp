#include "core/model/routing.hpp"

#include "core/error.hpp"

namespace dmuon {
namespace {

bool matches_any(const std::vector<std::string>& patterns, const std::string& name,
                 std::vector<bool>& used) {
  bool hit = false;
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    if (glob_match(patterns[i], name)) used[i] = hit = true;
  }
  return hit;
}

void check_all_used(const std::vector<std::string>& patterns, const std::vector<bool>& used,
                    const char* list) {
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    if (!used[i]) {
      throw Error(std::string("routing.") + list + "[" + std::to_string(i) + "]: pattern '" +
                  patterns[i] + "' matches no parameter");
    }
  }
}

// One entry per matrix (an expert stack of E experts is E entries): far above any published
// model (DeepSeek-V3: ~45k), low enough that a typo in an expert count is an error, not an
// out-of-memory kill.
constexpr std::int64_t kMaxMuonMatrices = 1'000'000;

void add_muon_matrices(const ParamSpec& p, std::size_t index, Routing& r) {
  const bool stack = p.role == ParamRole::expert_stack && p.shape.size() == 3;
  const std::int64_t adding = stack ? p.shape[0] : 1;
  if (adding > kMaxMuonMatrices - static_cast<std::int64_t>(r.muon_matrices.size())) {
    throw Error("routing: parameter '" + p.name + "' brings the Muon matrices to more than " +
                std::to_string(kMaxMuonMatrices) + ", the supported maximum");
  }
  if (stack) {
    for (std::int64_t e = 0; e < p.shape[0]; ++e) {
      r.muon_matrices.push_back({index, e, p.shape[1], p.shape[2], p.layer,
                                 p.name + "[" + std::to_string(e) + "]"});
    }
    return;
  }
  std::int64_t cols = 1;
  for (std::size_t d = 1; d < p.shape.size(); ++d) cols *= p.shape[d];
  r.muon_matrices.push_back({index, -1, p.shape[0], cols, p.layer, p.name});
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& text) {
  // Iterative matcher with one backtrack point: linear in practice, no recursion blow-up.
  std::size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Routing route_parameters(const ModelSpec& model, const RoutingRules& rules) {
  Routing r;
  std::vector<bool> muon_used(rules.muon.size()), adamw_used(rules.adamw.size());
  for (std::size_t i = 0; i < model.params.size(); ++i) {
    const auto& p = model.params[i];
    const bool to_muon = matches_any(rules.muon, p.name, muon_used);
    const bool to_adamw = matches_any(rules.adamw, p.name, adamw_used);
    if (to_muon && to_adamw) {
      throw Error("routing: parameter '" + p.name + "' matches both a muon and an adamw pattern");
    }
    if (to_muon && p.shape.size() < 2) {
      throw Error("routing.muon: parameter '" + p.name + "' has " + std::to_string(p.shape.size()) +
                  " dimension(s); Muon needs a matrix");
    }
    const bool by_role = p.role == ParamRole::matrix || p.role == ParamRole::expert_stack;
    const Update u = to_muon ? Update::muon : to_adamw ? Update::adamw : by_role ? Update::muon : Update::adamw;
    r.per_param.push_back(u);
    if (u == Update::muon) {
      add_muon_matrices(p, i, r);
      r.muon_numel += p.numel();
    } else {
      r.adamw_params.push_back(i);
      r.adamw_numel += p.numel();
    }
  }
  check_all_used(rules.muon, muon_used, "muon");
  check_all_used(rules.adamw, adamw_used, "adamw");
  return r;
}

std::string layer_key(const ModelSpec& model, const MuonMatrix& matrix) {
  const ParamSpec& p = model.params.at(matrix.param);
  if (p.layer < 0) return "param/" + p.name;
  return p.tower + "/" + std::to_string(p.layer);
}

}  // namespace dmuon
