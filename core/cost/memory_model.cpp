#include "core/cost/memory_model.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/cost/activation_memory.hpp"
#include "core/error.hpp"

namespace dmuon {
namespace {


// What the Plan does that decides where parameters live.
struct PlanFacts {
  std::vector<bool> muon_updated;  // per parameter: some rank applies a Muon update to it
  bool gathers_params = false;     // the forward all-gathers parameter shards (FSDP2)
  bool run_ahead = false;          // run-ahead broadcasts: every GPU keeps a bf16 replica
};

PlanFacts facts_of(const Plan& plan, std::size_t params) {
  PlanFacts f;
  f.muon_updated.assign(params, false);
  for (const auto& ops : plan.ranks) {
    for (const Op& op : ops) {
      if (op.kind == OpKind::muon_update) {
        for (const Region& r : op.regions) f.muon_updated[r.param] = true;
      }
      f.gathers_params = f.gathers_params ||
                         (op.kind == OpKind::all_gather && op.phase == Phase::forward && op.buffer == BufferKind::param);
      f.run_ahead = f.run_ahead || op.run_ahead;
    }
  }
  return f;
}

// Elements of the model, of what the Plan updates with Muon and with AdamW, of the largest
// transformer block (all of a block's parameters), of the largest Muon parameter and of the
// largest block's Muon parameters.
struct Sizes {
  double total = 0, muon = 0, adamw = 0;
  double largest_block = 0, largest_muon_param = 0, largest_muon_block = 0;
};

Sizes sizes_of(const ModelSpec& model, const PlanFacts& facts) {
  Sizes s;
  std::map<std::pair<std::string, int>, double> block, muon_block;
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    const auto& ps = model.params[p];
    const double n = double(ps.numel());
    s.total += n;
    const bool muon = facts.muon_updated[p];
    (muon ? s.muon : s.adamw) += n;
    block[{ps.tower, ps.layer}] += n;
    if (muon) {
      muon_block[{ps.tower, ps.layer}] += n;
      s.largest_muon_param = std::max(s.largest_muon_param, n);
    }
  }
  for (const auto& [k, n] : block) s.largest_block = std::max(s.largest_block, n);
  for (const auto& [k, n] : muon_block) s.largest_muon_block = std::max(s.largest_muon_block, n);
  return s;
}

// Elements of the Muon matrices of the owner that holds the most (Plan::matrix_owner).
double most_owned(const Plan& plan, const Routing& routing) {
  std::map<int, double> owned;
  for (std::size_t i = 0; i < plan.matrix_owner.size(); ++i) {
    const auto& mm = routing.muon_matrices[i];
    owned[plan.matrix_owner[i]] += double(mm.rows) * double(mm.cols);
  }
  double most = 0;
  for (const auto& [rank, n] : owned) most = std::max(most, n);
  return most;
}

}  // namespace

double activation_bytes(const ModelSpec& model, const TrainingSpec& t) {
  // The tower's structure where it was generated from a transformer config
  // (core/cost/activation_memory.hpp); else the block's hidden size (its first norm weight's
  // length) times training.activation_bytes_per_token_hidden.
  std::map<std::string, const TransformerConfig*> configs;
  for (const auto& tt : model.transformers) configs[tt.tower] = &tt.config;
  const auto tokens_of = [&](const std::string& tower) {
    auto it = t.tower_tokens.find(tower);
    return double(it != t.tower_tokens.end() ? it->second : t.seq_len) * double(t.micro_batch);
  };
  std::map<std::pair<std::string, int>, double> hidden;
  for (const auto& p : model.params) {
    if (p.layer < 0 || p.role != ParamRole::norm || hidden.count({p.tower, p.layer})) continue;
    hidden[{p.tower, p.layer}] = double(p.numel());
  }
  double full = 0, inputs = 0, largest = 0, loss = 0;
  for (const auto& [key, h] : hidden) {
    const double tokens = tokens_of(key.first);
    const auto config = configs.find(key.first);
    double per_token = t.activation_bytes_per_token_hidden * h;
    if (config != configs.end()) {
      const TransformerConfig& c = *config->second;
      const bool moe_layer = c.moe.experts > 0 && key.second >= c.moe.dense_layers;
      per_token = block_activation_bytes_per_token(c, moe_layer, t.moe_top_k);
    }
    const double block = per_token * tokens;
    full += block;
    inputs += 2 * h * tokens;
    largest = std::max(largest, block);
  }
  for (const auto& [tower, c] : configs) loss += loss_activation_bytes_per_token(*c) * tokens_of(tower);
  return (t.activation_checkpointing ? inputs + largest : full) + loss;
}

MemoryBreakdown memory_per_gpu(const Plan& plan, const ModelSpec& model, const Routing& routing,
                               const TrainingSpec& training) {
  const PlanFacts facts = facts_of(plan, model.params.size());
  const Sizes s = sizes_of(model, facts);
  const double shards = plan.mesh.shard;
  const double in_flight_blocks = double(training.prefetch_layers) + 1;  // in use + prefetched
  MemoryBreakdown m;
  m.activation_bytes = activation_bytes(model, training);
  // Newton-Schulz workspace: the input, output and two Gram/product buffers of the largest
  // matrix, bf16 (none when the Plan updates nothing with Muon).
  const double ns_workspace = 4 * 2 * s.largest_muon_param;
  if (traits(plan.strategy).owner_keeps_matrix) {
    // Owner: fp32 master, gradient and momentum of each whole owned matrix, plus the bf16
    // packed copy it broadcasts; everyone else holds FSDP2 shards of the AdamW parameters.
    // Run-ahead (post-step) broadcasts leave every GPU a bf16 replica of every Muon matrix.
    const double most = most_owned(plan, routing);
    m.master_bytes = 4 * most + 4 * s.adamw / shards;
    m.grad_bytes = 4 * most + 4 * s.adamw / shards;
    m.state_bytes = 4 * most + 8 * s.adamw / shards;
    m.transient_bytes = 2 * most + 2 * in_flight_blocks * s.largest_block + 4 * s.largest_muon_block + ns_workspace +
                        (facts.run_ahead ? 2 * s.muon : 0);
    m.grads_apart_from_activations = true;
  } else if (facts.gathers_params) {
    // FSDP2: every rank keeps its shard of everything; the forward unshards blocks in bf16
    // (in use + prefetched) and the backward holds one block's fp32 gradient.
    m.master_bytes = 4 * s.total / shards;
    m.grad_bytes = 4 * s.total / shards;
    m.state_bytes = (4 * s.muon + 8 * s.adamw) / shards;
    m.transient_bytes = 2 * in_flight_blocks * s.largest_block + 4 * s.largest_block + ns_workspace;
    m.grads_apart_from_activations = true;
  } else {
    // DDP: every rank keeps everything, plus the bf16 compute copy of every weight.
    m.master_bytes = 4 * s.total;
    m.grad_bytes = 4 * s.total;
    m.state_bytes = 4 * s.muon + 8 * s.adamw;
    m.transient_bytes = 2 * s.total + ns_workspace;
  }
  return m;
}

std::string describe(const MemoryBreakdown& m) {
  char buf[200];
  if (m.grads_apart_from_activations) {
    std::snprintf(buf, sizeof buf, "master %.2f + optimizer state %.2f + transient %.2f + max(grads %.2f, activations %.2f) GiB",
                  m.master_bytes / kGiB, m.state_bytes / kGiB, m.transient_bytes / kGiB, m.grad_bytes / kGiB,
                  m.activation_bytes / kGiB);
  } else {
    std::snprintf(buf, sizeof buf, "master %.2f + grads %.2f + optimizer state %.2f + transient %.2f + activations %.2f GiB",
                  m.master_bytes / kGiB, m.grad_bytes / kGiB, m.state_bytes / kGiB, m.transient_bytes / kGiB,
                  m.activation_bytes / kGiB);
  }
  return buf;
}

void check_fits(Strategy strategy, const MemoryBreakdown& m, double gpu_memory_GiB) {
  if (m.fits(gpu_memory_GiB)) return;
  const double need_GiB = m.total_GiB();
  char buf[120];
  std::snprintf(buf, sizeof buf, " needs %.2f GiB per GPU (", need_GiB);
  std::string msg = "strategy " + std::string(to_string(strategy)) + buf + describe(m);
  std::snprintf(buf, sizeof buf, ") but cluster.gpu_memory_GiB is %.4g", gpu_memory_GiB);
  throw Error(msg + buf);
}

}  // namespace dmuon
