// The config a transformer tower is generated from (core/model/transformer_generator) and that the
// forward/backward cost model (core/cost/forward_backward_cost) reads its structure from.
#pragma once
#include <cstdint>
#include <string>

#include "core/optimizer/dtype.hpp"

namespace dmuon {

enum class NormKind { rmsnorm, layernorm };  // layernorm also has a bias

struct MoeConfig {
  std::int64_t experts = 0;            // routed experts per MoE layer; 0 = dense model
  std::int64_t expert_ffn = 0;         // intermediate size of one routed expert
  std::int64_t shared_experts = 0;     // shared experts, stored as one MLP
  std::int64_t shared_expert_ffn = 0;  // its width; 0 = shared_experts * expert_ffn
  std::int64_t dense_layers = 0;       // the first N layers keep a dense MLP of width `ffn`
};

struct TransformerConfig {
  std::string prefix = "model";  // parameter names start with it: model.layers.3.mlp.up_proj.weight
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  // 0 = heads
  std::int64_t head_dim = 0;  // 0 = hidden / heads
  std::int64_t ffn = 0;       // dense MLP width (may be 0 when every layer is MoE)
  std::int64_t vocab = 0;     // 0 = no token embedding (vision encoders, action experts)
  bool tied_embeddings = false;
  bool fused_qkv = false;   // one qkv weight instead of q, k, v
  bool qkv_bias = false;
  bool o_bias = false;
  bool mlp_gated = true;    // gate+up+down (SwiGLU); false: up+down (fc1, fc2)
  bool mlp_bias = false;
  bool qk_norm = false;     // per-head RMSNorm on q and k (Qwen3)
  bool final_norm = true;
  NormKind norm = NormKind::rmsnorm;
  MoeConfig moe;
  DType dtype = DType::bf16;

  std::int64_t effective_kv_heads() const { return kv_heads ? kv_heads : heads; }
  std::int64_t effective_head_dim() const { return head_dim ? head_dim : hidden / heads; }
};

}  // namespace dmuon
