// The transformer generator reproduces published parameter totals exactly, and routing sends
// hidden matrices to Muon and everything else to AdamW.
#include <string>

#include "catch_compat.hpp"
#include "core/model/model_yaml.hpp"
#include "core/model/routing.hpp"

using namespace dmuon;

namespace {
ModelSpec model(const std::string& file) {
  return load_model_file(std::string(DMUON_SOURCE_DIR) + "/scenarios/models/" + file);
}
std::int64_t count_role(const ModelSpec& m, ParamRole role) {
  std::int64_t n = 0;
  for (const auto& p : m.params) n += p.role == role;
  return n;
}
}  // namespace

TEST_CASE("generator reproduces published parameter totals", "[model]") {
  CHECK(model("qwen2-0.5b.yaml").total_params() == 494'032'768);
  CHECK(model("qwen2.5-3b.yaml").total_params() == 3'085'938'688);
  CHECK(model("llama3-8b.yaml").total_params() == 8'030'261'248);
  CHECK(model("qwen3-30b-a3b.yaml").total_params() == 30'532'122'624);
  CHECK(model("qwen2.5-vl-3b.yaml").total_params() == 3'754'622'976);
}

TEST_CASE("Qwen2-0.5B routes 168 Muon matrices of three shapes", "[model][routing]") {
  const auto m = model("qwen2-0.5b.yaml");
  const auto r = route_parameters(m, {});
  REQUIRE(r.muon_matrices.size() == 168);
  int square = 0, kv = 0, mlp = 0;
  for (const auto& mm : r.muon_matrices) {
    if (mm.rows == 896 && mm.cols == 896) ++square;
    if (mm.rows == 128 && mm.cols == 896) ++kv;
    if ((mm.rows == 4864 && mm.cols == 896) || (mm.rows == 896 && mm.cols == 4864)) ++mlp;
  }
  CHECK(square == 48);
  CHECK(kv == 48);
  CHECK(mlp == 72);
  // Tied embedding, norms and q/k/v biases go to AdamW.
  CHECK(r.muon_numel + r.adamw_numel == m.total_params());
  CHECK(r.adamw_numel == 151936LL * 896 + 896 * (2 * 24 + 1) + 24 * (896 + 2 * 128));
  CHECK(count_role(m, ParamRole::embedding) == 1);
  CHECK(count_role(m, ParamRole::output_head) == 0);
}

TEST_CASE("Llama-3-8B has an untied head routed to AdamW", "[model][routing]") {
  const auto m = model("llama3-8b.yaml");
  const auto r = route_parameters(m, {});
  CHECK(r.muon_matrices.size() == 32 * 7);
  CHECK(count_role(m, ParamRole::output_head) == 1);
  CHECK(r.adamw_numel == 2 * 128256LL * 4096 + 4096 * 65);
}

TEST_CASE("Llama-3.2-3B as DMuon's bench_llm.py builds it: untied, 3.61B", "[model][routing]") {
  const auto m = model("llama3.2-3b.yaml");
  // embed + lm_head + 28 x (q, k, v, o, gate/up/down, 2 norms) + final norm; no q/k/v bias.
  constexpr std::int64_t h = 3072, kv = 8 * 128, ffn = 8192, vocab = 128256, layers = 28;
  constexpr std::int64_t layer = h * h + 2 * h * kv + h * h + 3 * h * ffn + 2 * h;
  constexpr std::int64_t total = 2 * vocab * h + layers * layer + h;
  static_assert(total == 3'606'752'256);
  CHECK(m.total_params() == total);
  const auto r = route_parameters(m, {});
  CHECK(r.muon_matrices.size() == 28 * 7);
  CHECK(count_role(m, ParamRole::embedding) == 1);
  CHECK(count_role(m, ParamRole::output_head) == 1);
  CHECK(r.adamw_numel == 2 * vocab * h + h * (2 * layers + 1));
}

TEST_CASE("MoE expert stacks become E separate Muon matrices", "[model][routing]") {
  const auto m = model("qwen3-30b-a3b.yaml");
  const auto r = route_parameters(m, {});
  std::int64_t experts = 0;
  for (const auto& mm : r.muon_matrices) experts += mm.expert >= 0;
  CHECK(experts == 48 * 128 * 3);
  // 4 attention projections + router per layer, plus the experts.
  CHECK(r.muon_matrices.size() == static_cast<std::size_t>(48 * 5 + experts));
  const auto& first = r.muon_matrices[0];
  CHECK(first.layer == 0);
}

TEST_CASE("routing patterns override roles and reject mistakes", "[routing]") {
  const auto m = model("qwen3-30b-a3b.yaml");
  RoutingRules rules;
  rules.adamw = {"*.mlp.gate.weight"};  // routers to AdamW
  const auto r = route_parameters(m, rules);
  CHECK(r.muon_matrices.size() == static_cast<std::size_t>(48 * 4 + 48 * 128 * 3));

  RoutingRules typo;
  typo.adamw = {"*.mlp.gaet.weight"};
  CHECK_THROWS_WITH(route_parameters(m, typo), Catch::Contains("matches no parameter"));

  RoutingRules both;
  both.adamw = {"*.q_proj.weight"};
  both.muon = {"model.layers.0.self_attn.*"};
  CHECK_THROWS_WITH(route_parameters(m, both), Catch::Contains("both"));

  RoutingRules vector_to_muon;
  vector_to_muon.muon = {"model.norm.weight"};
  CHECK_THROWS_WITH(route_parameters(m, vector_to_muon), Catch::Contains("Muon needs a matrix"));

  RoutingRules embed_to_muon;
  embed_to_muon.muon = {"lm_head.weight"};
  const auto r2 = route_parameters(m, embed_to_muon);
  CHECK(r2.muon_matrices.size() == r.muon_matrices.size() + 48 + 1);
}

TEST_CASE("glob matching", "[routing]") {
  CHECK(glob_match("*", "anything"));
  CHECK(glob_match("model.layers.*.mlp.*", "model.layers.12.mlp.up_proj.weight"));
  CHECK_FALSE(glob_match("model.layers.*.mlp", "model.layers.12.mlp.up_proj.weight"));
  CHECK(glob_match("a?c", "abc"));
  CHECK_FALSE(glob_match("a?c", "ac"));
  CHECK(glob_match("*b*b*", "abab"));
  CHECK_FALSE(glob_match("*b*b*", "aab"));
}
