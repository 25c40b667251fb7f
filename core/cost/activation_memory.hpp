// Activation memory of a transformer's forward, from its structure: the tensors autograd keeps
// for the backward, bf16, without recomputation, with a fused attention (SDPA/flash: no s x s
// scores kept). Per token of one block (h hidden, q = heads x head_dim, kv = kv_heads x head_dim,
// f the MLP width, 2 bytes an element):
//   attention: the first norm's input and output (2h + 2h), q and k after RoPE and v
//              (2q + 4kv; with qk_norm also their inputs, 2q + 2kv), its output (2q) and the
//              log-sum-exp (4 bytes a head);
//   MLP:       the second norm's input and output (2h + 2h); gated (SwiGLU) gate, up, SiLU(gate)
//              and their product, the down projection's input (8f); ungated fc1 and its
//              activation (4f);
//   MoE:       every expert a token visits (training.moe_top_k, default all) as a gated MLP of
//              expert_ffn plus the token's routed copy (8 expert_ffn + 2h each), the shared
//              expert (8 shared width) and the router's probabilities (4 bytes an expert).
// The loss of a tower with a vocabulary: bf16 logits, their fp32 copy and the fp32 log-softmax
// cross-entropy keeps (2 + 4 + 4 bytes per token per vocabulary entry), held at the end of the
// forward. Korthikanti et al.'s 34 h (a 4h GELU MLP, full multi-head attention) is what this
// gives for such a block within 2h; a SwiGLU MLP of 5.4 h (Qwen2.5-3B) keeps 55 h, and the loss
// of a 151,936-entry vocabulary alone is 5.8 GiB at 4,096 tokens: what made the 34 h model 31%
// low on Qwen2.5-1.5B's FSDP2 peak (reports/memory-validation.md).
#pragma once
#include <cstdint>
#include <optional>

#include "core/model/transformer_config.hpp"

namespace dmuon {

// Bytes one block keeps per token; `moe_layer`: the block's MLP is the MoE one (else dense ffn).
double block_activation_bytes_per_token(const TransformerConfig& c, bool moe_layer, std::optional<std::int64_t> top_k);

// Bytes the loss keeps per token for a tower with a vocabulary (0 without one).
double loss_activation_bytes_per_token(const TransformerConfig& c);

}  // namespace dmuon
