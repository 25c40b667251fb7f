#include "core/cost/forward_backward_cost.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>

#include "core/cost/forward_backward_grid.hpp"
#include "core/cost/host_paced.hpp"
#include "core/cost/layer_timing.hpp"

namespace dmuon {
namespace {

using UnitKey = std::tuple<int, int, int>;  // (tower, part, layer)

struct Attention {
  double samples = 0, seq_len = 0, heads = 0, head_dim = 0;
};

// What one unit computes, for the whole micro-batch.
struct Work {
  double flops = 0;  // forward
  std::vector<UnitGemm> gemms;
  std::vector<Attention> attention;
  double forward_bytes = 0, backward_bytes = 0;  // elementwise traffic, counted as below
};

// Elementwise traffic in "logical" bytes per element (bf16, 2 B): each op's tensors read and
// written once, as if fused. measure_layers.py measures elementwise_GBps with the same count on
// PyTorch's real kernels (HF's RMSNorm with its fp32 upcast, SiLU * mul), so the rate absorbs
// the extra passes eager PyTorch makes. Not modelled: q/k/v transposes around attention, dropout
// (off in these models), the router's softmax/top-k (tokens x experts, small), bias adds (fused
// into the GEMM epilogue), the optimizer-side casts of FSDP2 (they belong to collectives).
constexpr double kNormForward = 4, kNormBackward = 6;      // read x, write y | read dy and x, write dx
constexpr double kGluForward = 6, kGluBackward = 10;       // SiLU(gate) * up: read 2, write 1 | read 3, write 2
constexpr double kActForward = 4, kActBackward = 6;        // ungated GELU: read, write | read dy and x, write dx
constexpr double kAddForward = 6, kAddBackward = 6;        // residual add | the gradient sum at the branch
constexpr double kRopeForward = 4, kRopeBackward = 4;      // q and k rotated: read, write (cos/sin ignored)
constexpr double kCopyForward = 4, kCopyBackward = 4;      // MoE token permutation (read, write) each way
constexpr double kLossForward = 4, kLossBackward = 6;      // cross-entropy over the logits, priced as a norm
constexpr double kLookupForward = 4, kLookupBackward = 4;  // embedding rows gathered | scatter-added back

double tower_tokens_per_sample(const std::string& tower, const TrainingSpec& t) {
  auto it = t.tower_tokens.find(tower);
  return double(it != t.tower_tokens.end() ? it->second : t.seq_len);
}

const TowerTransformer* structure_of(const ModelSpec& model, const std::string& tower) {
  for (const auto& s : model.transformers) {
    if (s.tower == tower) return &s;
  }
  return nullptr;
}

double active_experts(double experts, const TrainingSpec& t) {
  return t.moe_top_k ? std::min(experts, double(*t.moe_top_k)) : experts;
}

// One parameter's share of its unit: its GEMM (by role and shape), or its lookup / norm traffic.
// `in_structured_block`: the block's norms are priced from the structure (block_work) instead.
void add_param(Work& w, const ParamSpec& p, double tokens, const TrainingSpec& t, bool in_structured_block) {
  const double numel = double(p.numel());
  switch (p.role) {
    case ParamRole::matrix:
    case ParamRole::output_head: {
      w.flops += 2.0 * numel * tokens;
      const double out = double(p.shape.front());
      w.gemms.push_back({tokens, numel / out, out, 1});
      if (p.role == ParamRole::output_head) {
        w.forward_bytes += kLossForward * tokens * out, w.backward_bytes += kLossBackward * tokens * out;
      }
      break;
    }
    case ParamRole::expert_stack: {
      const double experts = double(p.shape.front());
      const double active = active_experts(experts, t);
      w.flops += 2.0 * numel / experts * active * tokens;
      // Each expert sees tokens * active / experts tokens on average (balanced routing).
      w.gemms.push_back({tokens * active / experts, double(p.shape[2]), double(p.shape[1]), experts});
      break;
    }
    case ParamRole::embedding: {
      const double width = numel / double(p.shape.front());
      w.forward_bytes += kLookupForward * tokens * width;
      w.backward_bytes += kLookupBackward * tokens * width + 2 * numel;  // + zeroing the gradient
      break;
    }
    case ParamRole::norm:
      if (!in_structured_block) w.forward_bytes += kNormForward * tokens * numel, w.backward_bytes += kNormBackward * tokens * numel;
      break;
    case ParamRole::bias: break;
  }
}

// A generated block's attention and elementwise traffic, from its config.
void add_block_structure(Work& w, const TransformerConfig& c, int layer, double seq, const TrainingSpec& t) {
  const double samples = double(t.micro_batch), tokens = seq * samples;
  const double hidden = double(c.hidden), hd = double(c.effective_head_dim());
  const double q = double(c.heads) * hd, kv = double(c.effective_kv_heads()) * hd;
  w.flops += 2.0 * seq * seq * q * samples;  // causal: 2 x 2 s^2 d, half masked
  w.attention.push_back({samples, seq, double(c.heads), hd});
  double fwd = 2 * kNormForward * tokens * hidden + 2 * kAddForward * tokens * hidden;
  double bwd = 2 * kNormBackward * tokens * hidden + 2 * kAddBackward * tokens * hidden;
  fwd += kRopeForward * tokens * (q + kv), bwd += kRopeBackward * tokens * (q + kv);
  if (c.qk_norm) fwd += kNormForward * tokens * (q + kv), bwd += kNormBackward * tokens * (q + kv);
  const double act_f = c.mlp_gated ? kGluForward : kActForward, act_b = c.mlp_gated ? kGluBackward : kActBackward;
  const auto& m = c.moe;
  double width = double(c.ffn);  // elements of the MLP's hidden activation per token
  if (m.experts > 0 && layer >= m.dense_layers) {
    const double active = active_experts(double(m.experts), t);
    const double shared = double(m.shared_expert_ffn ? m.shared_expert_ffn : m.shared_experts * m.expert_ffn);
    width = active * double(m.expert_ffn) + shared;
    fwd += 2 * kCopyForward * tokens * active * hidden, bwd += 2 * kCopyBackward * tokens * active * hidden;
  }
  w.forward_bytes += fwd + act_f * tokens * width;
  w.backward_bytes += bwd + act_b * tokens * width;
}

struct Units {
  std::map<UnitKey, Work> work;
  std::vector<UnitKey> key_of_param;
};

Units make_units(const ModelSpec& model, const TrainingSpec& t) {
  std::map<std::string, int> tower_order;
  for (const auto& p : model.params) tower_order.emplace(p.tower, static_cast<int>(tower_order.size()));
  Units u;
  for (const auto& p : model.params) {
    const int tower = tower_order.at(p.tower);
    const int part = p.layer >= 0 ? 1 : (p.role == ParamRole::embedding ? 0 : 2);
    const UnitKey key{tower, part, std::max(0, p.layer)};
    u.key_of_param.push_back(key);
    const bool structured = structure_of(model, p.tower) != nullptr;
    add_param(u.work[key], p, tower_tokens_per_sample(p.tower, t) * double(t.micro_batch), t, structured && part == 1);
  }
  for (const auto& s : model.transformers) {
    const int tower = tower_order.at(s.tower);
    const double seq = tower_tokens_per_sample(s.tower, t), tokens = seq * double(t.micro_batch);
    for (int layer = 0; layer < s.config.layers; ++layer) add_block_structure(u.work[{tower, 1, layer}], s.config, layer, seq, t);
    if (s.config.tied_embeddings && s.config.vocab > 0) {
      // The token embedding is also the output head: its GEMM and the loss run last.
      Work& head = u.work[{tower, 2, 0}];
      const double vocab = double(s.config.vocab), hidden = double(s.config.hidden);
      head.flops += 2.0 * (vocab * hidden) * tokens;
      head.gemms.push_back({tokens, hidden, vocab, 1});
      head.forward_bytes += kLossForward * tokens * vocab, head.backward_bytes += kLossBackward * tokens * vocab;
    }
  }
  return u;
}

// The measured layer for a unit, when the model is one generated tower that measure_layers.py
// builds exactly (no extra parameters, every block of one kind).
const LayerTiming* measured_layer(const ModelSpec& model, const UnitKey& key, const TrainingSpec& t,
                                  const ForwardBackwardTable& table) {
  if (model.transformers.size() != 1) return nullptr;
  const TowerTransformer& s = model.transformers.front();
  if (model.params.size() != s.generated_params) return nullptr;
  if (s.config.moe.experts > 0 && s.config.moe.dense_layers > 0) return nullptr;
  static const char* const kParts[] = {"embedding", "block", "head"};
  const std::string part = kParts[std::get<1>(key)];
  const auto seq = static_cast<long>(tower_tokens_per_sample(s.tower, t));
  for (const auto& l : table.layers) {
    if (l.model == model.name && l.part == part && l.micro_batch == t.micro_batch && l.seq_len == seq) return &l;
  }
  return nullptr;
}

std::optional<ForwardBackwardSeconds> interpolated(const Work& w, const GemmGrid& gemm, const AttentionGrid& attention,
                                                   const ForwardBackwardTable& table) {
  if (gemm.empty() || !table.elementwise_GBps || (!w.attention.empty() && attention.empty())) return std::nullopt;
  ForwardBackwardSeconds s;
  for (const UnitGemm& g : w.gemms) {
    const auto x = gemm.seconds(g.tokens, g.in, g.out);
    s.forward_s += x.forward_s * g.count, s.backward_s += x.backward_s * g.count;
  }
  for (const Attention& a : w.attention) {
    const auto x = attention.seconds(a.samples, a.seq_len, a.heads, a.head_dim);
    s.forward_s += x.forward_s, s.backward_s += x.backward_s;
  }
  const double bytes_per_s = *table.elementwise_GBps * 1e9;
  s.forward_s += w.forward_bytes / bytes_per_s, s.backward_s += w.backward_bytes / bytes_per_s;
  return s;
}

// The floor of the framework the step runs under: FSDP2's where the training is FSDP2 (the
// scenario prices its copies, training.fsdp2_copies) and the file has one, else eager PyTorch's
// (FSDP2 runs at least the eager layer's work on the host).
const HostFloor* floor_for(const ForwardBackwardTable& table, const TrainingSpec& t) {
  if (t.fsdp2_copies) {
    if (const HostFloor* f = host_floor_of(table.host_floor, HostFloorMode::fsdp2)) return f;
  }
  return host_floor_of(table.host_floor, HostFloorMode::eager);
}

// Paces the units by the host (core/cost/host_paced.hpp): each block costs the host its share of
// the floor's time at this model's depth, forward and backward in the proportion of its GPU
// times; the embedding and head cost it nothing of their own (their host work is in the line's
// intercept, spread over the blocks). Units the GPU waited on say "host floor". Returns them.
int pace_by_host(std::vector<ComputeUnit>& units, const HostFloor& floor, int blocks) {
  if (blocks == 0) return 0;
  const double per_block = host_seconds_at_depth(floor, blocks) / blocks;
  // A unit's host time in one direction: a block's share of per_block as its GPU time splits
  // (1 : 2 forward to backward when it has none), nothing for the embedding and head.
  const auto paced_unit = [&](const ComputeUnit& u, double gpu_s, double share_if_idle) -> PacedUnit {
    const double gpu = u.forward_s + u.backward_s;
    return {gpu_s, u.part != 1 ? 0 : per_block * (gpu > 0 ? gpu_s / gpu : share_if_idle)};
  };
  std::vector<PacedUnit> run;  // forward in order, then backward in reverse
  for (const ComputeUnit& u : units) run.push_back(paced_unit(u, u.forward_s, 1.0 / 3));
  for (auto it = units.rbegin(); it != units.rend(); ++it) run.push_back(paced_unit(*it, it->backward_s, 2.0 / 3));
  const std::vector<PacedTime> paced = host_paced(run);
  const std::size_t n = units.size();
  int waited = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ComputeUnit& u = units[i];
    const PacedTime& f = paced[i];
    const PacedTime& b = paced[2 * n - 1 - i];
    u.forward_host_wait_s = f.seconds - run[i].gpu_s, u.backward_host_wait_s = b.seconds - run[2 * n - 1 - i].gpu_s;
    u.forward_s = f.seconds, u.backward_s = b.seconds;
    if (f.waited || b.waited) u.source = "host floor", ++waited;
  }
  return waited;
}

std::string describe(const ForwardBackwardCost& c, const std::string& datasheet) {
  if (c.seconds_by_source.size() == 1 && c.seconds_by_source.front().first == "datasheet") return datasheet;
  std::string out = "forward_backward calibration:";
  char buf[96];
  for (const auto& [source, seconds] : c.seconds_by_source) {
    std::snprintf(buf, sizeof buf, " %s %.1f%%", source.c_str(), c.total_s > 0 ? 100 * seconds / c.total_s : 0.0);
    out += buf;
  }
  for (const auto& [source, seconds] : c.seconds_by_source) {
    if (source == "datasheet") out += " (datasheet: " + datasheet + ")";
  }
  return out;
}

}  // namespace

ForwardBackwardCost forward_backward_cost(const ModelSpec& model, const TrainingSpec& training, double peak_tflops,
                                          const ForwardBackwardTable* table) {
  const Units u = make_units(model, training);
  ForwardBackwardCost c;
  std::map<UnitKey, int> index;
  double total_flops = 0;
  for (const auto& [key, w] : u.work) {
    index[key] = static_cast<int>(c.units.size());
    c.units.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), w.flops, 0, 0, 0, 0, "datasheet", w.gemms});
    total_flops += w.flops;
  }
  for (const auto& key : u.key_of_param) c.unit_of_param.push_back(index.at(key));
  // 1 forward + 2 backward: seconds per forward FLOP.
  double s_per_flop = 1.0 / (peak_tflops * 1e12 * training.mfu);
  char buf[160];
  std::snprintf(buf, sizeof buf, "FLOPs at mfu %.3g of %.4g TFLOP/s", training.mfu, peak_tflops);
  std::string datasheet = buf;
  if (training.fwd_bwd_seconds) {
    s_per_flop = *training.fwd_bwd_seconds / (3 * total_flops);
    std::snprintf(buf, sizeof buf, "measured fwd+bwd %.4g s (training.fwd_bwd_seconds)", *training.fwd_bwd_seconds);
    datasheet = buf;
  }
  const GemmGrid gemm(table ? table->gemm : std::vector<GemmTiming>{});
  const AttentionGrid attention(table ? table->attention : std::vector<AttentionTiming>{});
  std::map<std::string, double> by_source;
  bool all_flop_priced = true;
  const HostFloor* floor = table && !training.fwd_bwd_seconds ? floor_for(*table, training) : nullptr;
  int blocks = 0;
  for (const ComputeUnit& unit : c.units) blocks += unit.part == 1;
  for (ComputeUnit& unit : c.units) {
    const UnitKey key{unit.tower, unit.part, unit.layer};
    unit.forward_s = unit.forward_flops * s_per_flop;
    unit.backward_s = 2 * unit.forward_s;
    if (training.fwd_bwd_seconds) {
      unit.source = "measured total";
    } else if (table) {
      if (const LayerTiming* l = measured_layer(model, key, training, *table)) {
        unit.forward_s = l->forward_s, unit.backward_s = l->backward_s, unit.source = "measured";
      } else if (auto s = interpolated(u.work.at(key), gemm, attention, *table)) {
        unit.forward_s = s->forward_s, unit.backward_s = s->backward_s, unit.source = "interpolated";
      }
    }
    all_flop_priced = all_flop_priced && (unit.source == "datasheet" || unit.source == "measured total");
  }
  // The calibration model's whole run over its parts scales every unit priced from parts.
  const std::optional<WholeOverParts> whole = table && !training.fwd_bwd_seconds ? whole_over_parts(table->layers) : std::nullopt;
  int scaled = 0;
  for (ComputeUnit& unit : c.units) {
    if (!whole || (unit.source != "measured" && unit.source != "interpolated")) continue;
    unit.forward_s *= whole->ratio(), unit.backward_s *= whole->ratio();
    ++scaled;
  }
  const int paced = floor ? pace_by_host(c.units, *floor, blocks) : 0;
  for (const ComputeUnit& unit : c.units) {
    by_source[std::string(unit.source)] += unit.forward_s + unit.backward_s;
    c.total_s += unit.forward_s + unit.backward_s;
  }
  // The FLOP-priced total is computed as it always was, so that figures stay identical.
  if (all_flop_priced && paced == 0) c.total_s = 3 * total_flops * s_per_flop;
  for (const char* s : {"measured total", "measured", "interpolated", "host floor", "datasheet"}) {
    if (by_source.count(s)) c.seconds_by_source.emplace_back(s, by_source.at(s));
  }
  if (training.fwd_bwd_seconds) {
    c.description = datasheet;
  } else {
    c.description = describe(c, datasheet);
  }
  if (scaled > 0) {
    std::snprintf(buf, sizeof buf, "; parts x %.4g (%s's whole run over its parts)", whole->ratio(), whole->model.c_str());
    c.description += buf;
  }
  if (floor) {
    std::snprintf(buf, sizeof buf, "; host floor %.3g ms a layer at %d layers (%s, measured on %s, %ld GPU%s) paces %d of %zu units",
                  host_seconds_at_depth(*floor, std::max(blocks, 1)) / std::max(blocks, 1) * 1e3,
                  blocks, std::string(to_string(floor->mode)).c_str(), floor->model.c_str(), floor->world,
                  floor->world == 1 ? "" : "s", paced, c.units.size());
    c.description += buf;
  }
  return c;
}

double forward_flops_per_sample(const ModelSpec& model, const TrainingSpec& training) {
  TrainingSpec one = training;
  one.micro_batch = 1;
  double total = 0;
  for (const auto& [key, w] : make_units(model, one).work) total += w.flops;
  return total;
}

}  // namespace dmuon
