#include "core/cost/activation_memory.hpp"

#include <algorithm>

namespace dmuon {
namespace {

constexpr double kBf16 = 2;

double mlp_bytes(std::int64_t width, bool gated) { return (gated ? 4 : 2) * kBf16 * double(width); }

}  // namespace

double block_activation_bytes_per_token(const TransformerConfig& c, bool moe_layer, std::optional<std::int64_t> top_k) {
  const double h = double(c.hidden);
  const double q = double(c.heads * c.effective_head_dim());
  const double kv = double(c.effective_kv_heads() * c.effective_head_dim());
  double attention = kBf16 * (2 * h + q + 2 * kv + q) + 4.0 * double(c.heads);
  if (c.qk_norm) attention += kBf16 * (q + kv);
  double mlp = kBf16 * 2 * h;
  if (moe_layer) {
    const MoeConfig& m = c.moe;
    const double visited = double(std::min(top_k.value_or(m.experts), m.experts));
    mlp += visited * (mlp_bytes(m.expert_ffn, true) + kBf16 * h) + 4.0 * double(m.experts);
    const std::int64_t shared = m.shared_expert_ffn ? m.shared_expert_ffn : m.shared_experts * m.expert_ffn;
    if (shared > 0) mlp += mlp_bytes(shared, true);
  } else {
    mlp += mlp_bytes(c.ffn, c.mlp_gated);
  }
  return attention + mlp;
}

double loss_activation_bytes_per_token(const TransformerConfig& c) { return (2.0 + 4.0 + 4.0) * double(c.vocab); }

}  // namespace dmuon
