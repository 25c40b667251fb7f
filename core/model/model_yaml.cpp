#include "core/model/model_yaml.hpp"

#include "core/error.hpp"
#include "core/model/transformer_generator.hpp"

namespace dmuon {
namespace {

template <typename T>
void read_int(const YamlMap& m, const char* key, T& out) {
  if (auto v = m.find(key)) out = v->as_int();
}
void read_bool(const YamlMap& m, const char* key, bool& out) {
  if (auto v = m.find(key)) out = v->as_bool();
}

MoeConfig parse_moe(const YamlValue& value) {
  YamlMap m(value);
  MoeConfig moe;
  moe.experts = m.get("experts").as_positive_int();
  moe.expert_ffn = m.get("expert_ffn").as_positive_int();
  read_int(m, "shared_experts", moe.shared_experts);
  read_int(m, "shared_expert_ffn", moe.shared_expert_ffn);
  read_int(m, "dense_layers", moe.dense_layers);
  m.finish();
  return moe;
}

TransformerConfig parse_transformer(const YamlValue& value, DType dtype) {
  YamlMap m(value);
  TransformerConfig c;
  c.dtype = dtype;
  if (auto v = m.find("prefix")) c.prefix = v->as_string();
  c.hidden = m.get("hidden").as_positive_int();
  c.layers = m.get("layers").as_positive_int();
  c.heads = m.get("heads").as_positive_int();
  if (auto v = m.find("kv_heads")) c.kv_heads = v->as_positive_int();
  if (auto v = m.find("head_dim")) c.head_dim = v->as_positive_int();
  if (auto v = m.find("ffn")) c.ffn = v->as_positive_int();
  if (auto v = m.find("vocab")) c.vocab = v->as_positive_int();
  read_bool(m, "tied_embeddings", c.tied_embeddings);
  read_bool(m, "fused_qkv", c.fused_qkv);
  read_bool(m, "qkv_bias", c.qkv_bias);
  read_bool(m, "o_bias", c.o_bias);
  read_bool(m, "mlp_gated", c.mlp_gated);
  read_bool(m, "mlp_bias", c.mlp_bias);
  read_bool(m, "qk_norm", c.qk_norm);
  read_bool(m, "final_norm", c.final_norm);
  if (auto v = m.find("norm")) {
    const auto s = v->as_string();
    if (s == "rmsnorm") c.norm = NormKind::rmsnorm;
    else if (s == "layernorm") c.norm = NormKind::layernorm;
    else v->fail("expected rmsnorm or layernorm, got '" + s + "'");
  }
  if (auto v = m.find("moe")) c.moe = parse_moe(*v);
  m.finish();
  try {
    validate(c, value.path());
  } catch (const Error& e) {
    value.fail_at(e.what());
  }
  return c;
}

ParamSpec parse_param(const YamlValue& value, DType dtype, const std::string& tower) {
  YamlMap m(value);
  ParamSpec p;
  p.name = m.get("name").as_string();
  for (const auto& d : m.get("shape").items()) p.shape.push_back(d.as_positive_int());
  if (p.shape.empty()) m.get("shape").fail("shape must have at least one dimension");
  p.dtype = dtype;
  if (auto v = m.find("dtype")) p.dtype = parse_scalar(*v, parse_dtype);
  p.role = infer_role(p.name, p.shape.size());
  if (auto v = m.find("role")) p.role = parse_scalar(*v, parse_param_role);
  if (auto v = m.find("layer")) {
    p.layer = v->as_int32();
    if (p.layer < -1) v->fail("must be >= 0, or -1 outside the transformer blocks");
  }
  p.tower = tower;
  m.finish();
  return p;
}

void append_params(const YamlValue& list, DType dtype, const std::string& tower, ModelSpec& model) {
  for (const auto& item : list.items()) model.params.push_back(parse_param(item, dtype, tower));
}

// The tower's parameters, and its config for the forward/backward cost model.
void append_generated(const TransformerConfig& config, const std::string& tower, ModelSpec& model) {
  auto params = generate_transformer(config, tower);
  model.transformers.push_back({tower, config, params.size()});
  for (auto& p : params) model.params.push_back(std::move(p));
}

void append_tower(const YamlValue& value, DType dtype, ModelSpec& model) {
  YamlMap m(value);
  const std::string name = m.get("name").as_string();
  const auto transformer = m.find("transformer");
  const auto params = m.find("params");
  if (!transformer && !params) value.fail("a tower needs 'transformer' or 'params'");
  if (transformer) append_generated(parse_transformer(*transformer, dtype), name, model);
  if (params) append_params(*params, dtype, name, model);
  m.finish();
}

}  // namespace

ModelSpec parse_model(const YamlValue& value) {
  YamlMap m(value);
  ModelSpec model;
  model.name = m.get("name").as_string();
  DType dtype = DType::bf16;
  if (auto v = m.find("dtype")) dtype = parse_scalar(*v, parse_dtype);
  m.find("source");  // free-text citation of where the shapes come from
  if (auto v = m.find("transformer")) append_generated(parse_transformer(*v, dtype), "language", model);
  if (auto v = m.find("towers")) {
    for (const auto& tower : v->items()) append_tower(tower, dtype, model);
  }
  if (auto v = m.find("params")) append_params(*v, dtype, "", model);
  m.finish();
  try {
    model.validate();
  } catch (const Error& e) {
    value.fail(e.what());
  }
  return model;
}

ModelSpec load_model_file(const std::string& path) { return parse_model(YamlValue::load_file(path)); }

}  // namespace dmuon
