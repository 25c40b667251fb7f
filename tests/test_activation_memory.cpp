// Activation memory from a transformer's structure (core/cost/activation_memory) and the peak
// rule of the memory model (core/cost/memory_model): the closed forms by hand, the loss term,
// checkpointing, and gradients not counted on top of activations where they are sharded.
#include "catch_compat.hpp"
#include "core/cost/activation_memory.hpp"
#include "core/cost/memory_model.hpp"
#include "core/io/yaml_reader.hpp"
#include "core/model/model_yaml.hpp"
#include "core/model/routing.hpp"
#include "core/plan/plan_builders.hpp"

using namespace dmuon;

namespace {

TransformerConfig qwen25_3b() {
  TransformerConfig c;
  c.hidden = 2048;
  c.layers = 36;
  c.heads = 16;
  c.kv_heads = 2;
  c.head_dim = 128;
  c.ffn = 11008;
  c.vocab = 151936;
  return c;
}

ModelSpec tiny_model() {
  return parse_model(YamlValue::load_string(
      "name: tiny\ntransformer: {hidden: 64, layers: 3, heads: 4, kv_heads: 2, ffn: 160, vocab: 1000}\n", "tiny.yaml"));
}

}  // namespace

TEST_CASE("a block keeps its saved tensors: closed forms by hand", "[memory]") {
  // GPT-like: full multi-head attention, ungated 4h MLP: 12h + 4 a head (attention), 4h + 16h (MLP).
  TransformerConfig gpt;
  gpt.hidden = 1024;
  gpt.heads = 16;
  gpt.ffn = 4096;
  gpt.mlp_gated = false;
  CHECK(block_activation_bytes_per_token(gpt, false, std::nullopt) == 32 * 1024 + 4 * 16);
  // Qwen2.5-3B: attention 2 (2h + q + 2kv + q) + 4 x 16 = 17472, MLP 2 x 2h + 8 x 11008 = 96256.
  const TransformerConfig q = qwen25_3b();
  CHECK(block_activation_bytes_per_token(q, false, std::nullopt) == 17472 + 96256);
  TransformerConfig qk = q;
  qk.qk_norm = true;  // + the inputs of the q and k norms
  CHECK(block_activation_bytes_per_token(qk, false, std::nullopt) == 17472 + 96256 + 2 * (2048 + 256));
  // MoE: every visited expert's gated MLP and the token's routed copy, the shared expert, the router.
  TransformerConfig moe = q;
  moe.moe.experts = 8;
  moe.moe.expert_ffn = 512;
  moe.moe.shared_experts = 1;
  const double attention = 17472, norms = 2 * 2 * 2048;
  CHECK(block_activation_bytes_per_token(moe, true, 2) == attention + norms + 2 * (8 * 512 + 2 * 2048) + 8 * 512 + 4 * 8);
  CHECK(block_activation_bytes_per_token(moe, true, std::nullopt) ==
        attention + norms + 8 * (8 * 512 + 2 * 2048) + 8 * 512 + 4 * 8);  // default: every expert
  CHECK(block_activation_bytes_per_token(moe, false, 2) == 17472 + 96256);  // a dense layer of it
  CHECK(loss_activation_bytes_per_token(q) == 10.0 * 151936);
}

TEST_CASE("a generated model's activations: every block from its structure, plus the loss", "[memory]") {
  const ModelSpec m = tiny_model();
  TrainingSpec t;
  t.seq_len = 32;
  t.micro_batch = 2;
  const TransformerConfig& c = m.transformers.at(0).config;
  const double tokens = 64, block = block_activation_bytes_per_token(c, false, std::nullopt) * tokens;
  const double loss = 10.0 * 1000 * tokens;
  CHECK(activation_bytes(m, t) == Approx(3 * block + loss).epsilon(1e-12));
  t.activation_checkpointing = true;  // each block's input (2 bytes of hidden), one whole block, the loss
  CHECK(activation_bytes(m, t) == Approx(3 * 2 * 64 * tokens + block + loss).epsilon(1e-12));
}

TEST_CASE("sharded gradients and activations are not held at once; DDP's are", "[memory]") {
  const ModelSpec m = tiny_model();
  const Routing routing = route_parameters(m, {});
  TrainingSpec t;
  t.seq_len = 32;
  t.micro_batch = 2;
  const Mesh mesh{1, 2};
  for (Strategy s : {Strategy::adamw, Strategy::ddp_redundant}) {
    const MemoryBreakdown b = memory_per_gpu(build_plan(s, m, routing, mesh, {}), m, routing, t);
    INFO(to_string(s));
    REQUIRE(b.activation_bytes > b.grad_bytes);  // this shape: the forward's peak is the larger
    const double rest = b.master_bytes + b.state_bytes + b.transient_bytes;
    if (s == Strategy::adamw) {
      CHECK(b.grads_apart_from_activations);
      CHECK(b.total_bytes() == rest + b.activation_bytes);
      CHECK_THAT(describe(b), Catch::Contains("max(grads"));
    } else {
      CHECK_FALSE(b.grads_apart_from_activations);
      CHECK(b.total_bytes() == rest + b.grad_bytes + b.activation_bytes);
    }
  }
}
