#include "core/model/transformer_generator.hpp"

#include <utility>

#include "core/error.hpp"

namespace dmuon {
namespace {

// Appends parameters for one tower; keeps the naming in one place.
class TowerBuilder {
 public:
  TowerBuilder(const TransformerConfig& c, std::string tower) : c_(c), tower_(std::move(tower)) {}

  void add(const std::string& name, std::vector<std::int64_t> shape, ParamRole role, int layer) {
    out_.push_back({name, std::move(shape), c_.dtype, role, layer, tower_});
  }
  void linear(const std::string& base, std::int64_t out, std::int64_t in, bool bias, int layer) {
    add(base + ".weight", {out, in}, ParamRole::matrix, layer);
    if (bias) add(base + ".bias", {out}, ParamRole::bias, layer);
  }
  void norm(const std::string& base, std::int64_t width, int layer) {
    add(base + ".weight", {width}, ParamRole::norm, layer);
    if (c_.norm == NormKind::layernorm) add(base + ".bias", {width}, ParamRole::bias, layer);
  }
  void attention(const std::string& p, int layer) {
    const auto hd = c_.effective_head_dim();
    const auto q = c_.heads * hd, kv = c_.effective_kv_heads() * hd;
    if (c_.fused_qkv) {
      linear(p + ".qkv", q + 2 * kv, c_.hidden, c_.qkv_bias, layer);
    } else {
      linear(p + ".q_proj", q, c_.hidden, c_.qkv_bias, layer);
      linear(p + ".k_proj", kv, c_.hidden, c_.qkv_bias, layer);
      linear(p + ".v_proj", kv, c_.hidden, c_.qkv_bias, layer);
    }
    linear(p + ".o_proj", c_.hidden, q, c_.o_bias, layer);
    if (c_.qk_norm) {
      add(p + ".q_norm.weight", {hd}, ParamRole::norm, layer);
      add(p + ".k_norm.weight", {hd}, ParamRole::norm, layer);
    }
  }
  void dense_mlp(const std::string& p, std::int64_t width, int layer) {
    if (c_.mlp_gated) linear(p + ".gate_proj", width, c_.hidden, c_.mlp_bias, layer);
    linear(p + ".up_proj", width, c_.hidden, c_.mlp_bias, layer);
    linear(p + ".down_proj", c_.hidden, width, c_.mlp_bias, layer);
  }
  void moe_mlp(const std::string& p, int layer) {
    const auto& m = c_.moe;
    add(p + ".gate.weight", {m.experts, c_.hidden}, ParamRole::matrix, layer);  // router
    if (c_.mlp_gated) {
      add(p + ".experts.gate_proj", {m.experts, m.expert_ffn, c_.hidden}, ParamRole::expert_stack, layer);
    }
    add(p + ".experts.up_proj", {m.experts, m.expert_ffn, c_.hidden}, ParamRole::expert_stack, layer);
    add(p + ".experts.down_proj", {m.experts, c_.hidden, m.expert_ffn}, ParamRole::expert_stack, layer);
    if (m.shared_experts > 0) {
      const auto width = m.shared_expert_ffn ? m.shared_expert_ffn : m.shared_experts * m.expert_ffn;
      dense_mlp(p + ".shared_experts", width, layer);
    }
  }
  std::vector<ParamSpec> build() {
    const std::string& pre = c_.prefix;
    if (c_.vocab > 0) add(pre + ".embed_tokens.weight", {c_.vocab, c_.hidden}, ParamRole::embedding, -1);
    for (int i = 0; i < c_.layers; ++i) {
      const std::string layer = pre + ".layers." + std::to_string(i);
      norm(layer + ".input_layernorm", c_.hidden, i);
      attention(layer + ".self_attn", i);
      norm(layer + ".post_attention_layernorm", c_.hidden, i);
      const bool is_moe = c_.moe.experts > 0 && i >= c_.moe.dense_layers;
      if (is_moe) {
        moe_mlp(layer + ".mlp", i);
      } else {
        dense_mlp(layer + ".mlp", c_.ffn, i);
      }
    }
    if (c_.final_norm) norm(pre + ".norm", c_.hidden, -1);
    if (c_.vocab > 0 && !c_.tied_embeddings) {
      add(pre == "model" ? "lm_head.weight" : pre + ".lm_head.weight", {c_.vocab, c_.hidden},
          ParamRole::output_head, -1);
    }
    return std::move(out_);
  }

 private:
  const TransformerConfig& c_;
  std::string tower_;
  std::vector<ParamSpec> out_;
};

void require_positive(std::int64_t v, const std::string& field) {
  if (v <= 0) throw Error(field + ": must be > 0, got " + std::to_string(v));
}

// Limits far above any published model that keep the generator's arithmetic (heads * head_dim,
// q + 2 kv, shared_experts * expert_ffn) inside int64 and its output (one entry per parameter of
// every layer) inside memory. Per-parameter element counts are checked by ModelSpec::validate.
constexpr std::int64_t kMaxSize = std::int64_t{1} << 30;
constexpr std::int64_t kMaxLayers = 4096;

void require_at_most(std::int64_t v, std::int64_t limit, const std::string& field) {
  if (v > limit) throw Error(field + ": " + std::to_string(v) + " is above the supported " + std::to_string(limit));
}

void check_limits(const TransformerConfig& c, const std::string& what) {
  require_at_most(c.layers, kMaxLayers, what + ".layers");
  const std::pair<std::int64_t, const char*> sizes[] = {
      {c.hidden, "hidden"}, {c.heads, "heads"}, {c.kv_heads, "kv_heads"}, {c.head_dim, "head_dim"},
      {c.ffn, "ffn"}, {c.vocab, "vocab"}, {c.moe.experts, "moe.experts"}, {c.moe.expert_ffn, "moe.expert_ffn"},
      {c.moe.shared_experts, "moe.shared_experts"}, {c.moe.shared_expert_ffn, "moe.shared_expert_ffn"},
      {c.moe.dense_layers, "moe.dense_layers"}};
  for (const auto& [value, name] : sizes) require_at_most(value, kMaxSize, what + "." + name);
}

}  // namespace

void validate(const TransformerConfig& c, const std::string& what) {
  require_positive(c.hidden, what + ".hidden");
  require_positive(c.layers, what + ".layers");
  require_positive(c.heads, what + ".heads");
  check_limits(c, what);
  if (c.kv_heads < 0) throw Error(what + ".kv_heads: must be >= 0");
  if (c.head_dim == 0 && c.hidden % c.heads != 0) {
    throw Error(what + ".head_dim: hidden " + std::to_string(c.hidden) + " is not a multiple of heads " +
                std::to_string(c.heads) + "; give head_dim explicitly");
  }
  if (c.head_dim < 0) throw Error(what + ".head_dim: must be > 0");
  if (c.kv_heads > 0 && c.heads % c.kv_heads != 0) {
    throw Error(what + ".kv_heads: heads " + std::to_string(c.heads) + " is not a multiple of kv_heads " +
                std::to_string(c.kv_heads));
  }
  const auto& m = c.moe;
  const bool any_dense = m.experts == 0 || m.dense_layers > 0;
  if (any_dense) require_positive(c.ffn, what + ".ffn");
  if (m.experts > 0) require_positive(m.expert_ffn, what + ".moe.expert_ffn");
  if (m.experts < 0 || m.shared_experts < 0 || m.dense_layers < 0 || m.shared_expert_ffn < 0) {
    throw Error(what + ".moe: counts must be >= 0");
  }
  if (m.dense_layers > c.layers) throw Error(what + ".moe.dense_layers: more than layers");
  if (c.vocab < 0) throw Error(what + ".vocab: must be >= 0");
  if (c.tied_embeddings && c.vocab == 0) throw Error(what + ".tied_embeddings: needs vocab > 0");
}

std::vector<ParamSpec> generate_transformer(const TransformerConfig& config, const std::string& tower) {
  validate(config, tower);
  return TowerBuilder(config, tower).build();
}

}  // namespace dmuon
