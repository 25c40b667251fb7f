// One builder per strategy. Each emits, in order: the forward-pass communication, the
// backward-pass gradient reduction, and the optimizer step.
#include "core/plan/plan_builders.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/plan/plan_writer.hpp"
#include "core/plan/builder_parts.hpp"

namespace dmuon {
namespace builder {

Op elementwise(OpKind kind, const Region& region, const std::string& label) {
  Op op;
  op.kind = kind;
  op.regions = {region};
  op.label = label;
  return op;
}

// Muon matrices of each parameter, in order.
std::map<std::size_t, Matrices> matrices_by_param(const Routing& routing) {
  std::map<std::size_t, Matrices> out;
  for (std::size_t m = 0; m < routing.muon_matrices.size(); ++m) out[routing.muon_matrices[m].param].push_back(m);
  return out;
}

bool is_muon(const Routing& routing, std::size_t param) { return routing.per_param[param] == Update::muon; }

// Splits `matrices` into same-shape batches of at most max_batch, in first-seen shape order.
std::vector<Matrices> batches_by_shape(const Routing& routing, const Matrices& matrices, int max_batch) {
  std::vector<std::pair<std::pair<long, long>, Matrices>> groups;
  for (std::size_t m : matrices) {
    const auto& mm = routing.muon_matrices[m];
    const std::pair<long, long> shape{mm.rows, mm.cols};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == shape; });
    if (it == groups.end()) {
      groups.push_back({shape, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(m);
  }
  std::vector<Matrices> out;
  for (const auto& [shape, ms] : groups) {
    for (std::size_t i = 0; i < ms.size(); i += static_cast<std::size_t>(max_batch)) {
      out.emplace_back(ms.begin() + static_cast<long>(i),
                       ms.begin() + static_cast<long>(std::min(ms.size(), i + static_cast<std::size_t>(max_batch))));
    }
  }
  return out;
}

Op newton_schulz(const Matrices& batch, const Routing& routing) {
  Op op;
  op.kind = OpKind::newton_schulz;
  op.matrices = batch;
  const auto& first = routing.muon_matrices[batch.front()];
  op.label = first.name + (batch.size() > 1 ? " +" + std::to_string(batch.size() - 1) : "");
  return op;
}

}  // namespace builder

namespace {
using namespace builder;

Region full(const ModelSpec& model, std::size_t param) { return {param, 0, model.params[param].numel()}; }

void fsdp_forward_backward(PlanWriter& w, const std::set<std::size_t>& params) {
  for (std::size_t p : params) w.fsdp_all_gather(p);
  for (auto it = params.rbegin(); it != params.rend(); ++it) w.fsdp_reduce_gradient(*it);
}

std::set<std::size_t> all_params(const ModelSpec& model) {
  std::set<std::size_t> out;
  for (std::size_t p = 0; p < model.params.size(); ++p) out.insert(p);
  return out;
}

// adamw: FSDP2 (HSDP on a 2-D mesh) with AdamW on every shard; no Newton-Schulz.
Plan build_adamw(PlanWriter& w) {
  fsdp_forward_backward(w, all_params(w.model()));
  for (std::size_t p = 0; p < w.model().params.size(); ++p) w.on_own_shards(OpKind::adamw, p, w.model().params[p].name);
  return w.finish();
}

// ddp-redundant: replicated parameters, bucketed all-reduce of gradients, then every rank runs
// momentum, Newton-Schulz and the update on every matrix (torch.optim.Muon under DDP).
Plan build_ddp_redundant(PlanWriter& w, const PlanOptions& o) {
  const ModelSpec& model = w.model();
  std::vector<Region> bucket;
  std::int64_t bucket_bytes = 0;
  auto flush = [&] {
    if (bucket.empty()) return;
    Op op;
    op.kind = OpKind::all_reduce;
    op.phase = Phase::backward;
    op.buffer = BufferKind::grad;
    op.reduce_op = ReduceOp::avg;
    op.regions = bucket;
    op.label = "bucket of " + std::to_string(bucket.size());
    w.collective(w.world_group(), op);
    bucket.clear();
    bucket_bytes = 0;
  };
  for (std::size_t p = model.params.size(); p-- > 0;) {  // gradients become ready in reverse order
    bucket.push_back(full(model, p));
    bucket_bytes += model.params[p].numel() * o.bytes_per_element;
    if (bucket_bytes >= o.ddp_bucket_bytes) flush();
  }
  flush();
  const auto by_param = matrices_by_param(w.routing());
  for (int r = 0; r < w.mesh().world(); ++r) {
    for (std::size_t p = 0; p < model.params.size(); ++p) {
      const std::string& name = model.params[p].name;
      if (!is_muon(w.routing(), p)) {
        w.compute(r, elementwise(OpKind::adamw, full(model, p), name));
        continue;
      }
      w.compute(r, elementwise(OpKind::momentum, full(model, p), name));
      for (std::size_t m : by_param.at(p)) w.compute(r, newton_schulz({m}, w.routing()));
      w.compute(r, elementwise(OpKind::muon_update, full(model, p), name));
    }
  }
  return w.finish();
}

// fsdp-gather: FSDP2 traffic, then every Muon gradient's momentum-updated shard is all-gathered
// and every rank runs Newton-Schulz on every full matrix, keeping its own shard of the update.
Plan build_fsdp_gather(PlanWriter& w) {
  const ModelSpec& model = w.model();
  fsdp_forward_backward(w, all_params(model));
  const auto by_param = matrices_by_param(w.routing());
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    const std::string& name = model.params[p].name;
    if (!is_muon(w.routing(), p)) {
      w.on_own_shards(OpKind::adamw, p, name);
      continue;
    }
    w.on_own_shards(OpKind::momentum, p, name);
    for (int rep = 0; rep < w.mesh().replicate; ++rep) {
      Op gather;
      gather.kind = OpKind::all_gather;
      gather.buffer = BufferKind::ns_input;
      gather.label = name;
      for (int s = 0; s < w.mesh().shard; ++s) gather.parts.push_back(shard_region(model, p, w.mesh().shard, s));
      w.collective(w.shard_group(rep), gather);
    }
    for (int r = 0; r < w.mesh().world(); ++r) {
      for (std::size_t m : by_param.at(p)) w.compute(r, newton_schulz({m}, w.routing()));
    }
    w.on_own_shards(OpKind::muon_update, p, name);
  }
  return w.finish();
}

Region intersect(const Region& a, const Region& b) {
  const std::int64_t begin = std::max(a.offset, b.offset);
  const std::int64_t end = std::min(a.offset + a.count, b.offset + b.count);
  return {a.param, begin, std::max<std::int64_t>(0, end - begin)};
}

// One all-to-all per replica: every shard holder's piece of each chunk matrix goes to (gather)
// or comes from (scatter) the matrix's owner in that replica's shard group.
void zero1_all_to_all(PlanWriter& w, const Matrices& chunk, const std::vector<int>& owner, bool gather) {
  const Mesh& mesh = w.mesh();
  for (int rep = 0; rep < mesh.replicate; ++rep) {
    Op op;
    op.kind = OpKind::all_to_all;
    op.buffer = gather ? BufferKind::ns_input : BufferKind::ns_output;
    op.label = std::string(gather ? "gather " : "scatter ") + w.routing().muon_matrices[chunk.front()].name;
    for (std::size_t m : chunk) {
      const Region whole = matrix_region(w.routing(), m);
      const int owner_rank = mesh.rank(rep, owner[m]);
      for (int s = 0; s < mesh.shard; ++s) {
        const int holder = mesh.rank(rep, s);
        const Region piece = intersect(shard_region(w.model(), whole.param, mesh.shard, s), whole);
        if (piece.count == 0 || holder == owner_rank) continue;
        op.transfers.push_back(gather ? Transfer{holder, owner_rank, piece, piece}
                                      : Transfer{owner_rank, holder, piece, piece});
      }
    }
    w.collective(w.shard_group(rep), op);
  }
}

// zero1-a2a: FSDP2 traffic; momentum on shards; chunks of matrices all-to-all gathered to their
// owners (at most max_in_flight chunks ahead), Newton-Schulz on the owner, all-to-all scattered
// back; then each rank updates its shards.
Plan build_zero1_a2a(PlanWriter& w, const std::vector<int>& owner, const PlanOptions& o) {
  const ModelSpec& model = w.model();
  fsdp_forward_backward(w, all_params(model));
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    if (is_muon(w.routing(), p)) w.on_own_shards(OpKind::momentum, p, model.params[p].name);
  }
  std::vector<Matrices> chunks;
  for (std::size_t m = 0; m < w.routing().muon_matrices.size(); ++m) {
    if (chunks.empty() || static_cast<int>(chunks.back().size()) == o.zero1_chunk_matrices) chunks.emplace_back();
    chunks.back().push_back(m);
  }
  const std::size_t ahead = static_cast<std::size_t>(std::max(1, o.zero1_max_in_flight));
  std::size_t gathered = 0;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    while (gathered < chunks.size() && gathered < c + ahead) zero1_all_to_all(w, chunks[gathered++], owner, true);
    for (int r = 0; r < w.mesh().world(); ++r) {
      Matrices mine;
      for (std::size_t m : chunks[c]) {
        if (owner[m] == w.mesh().shard_index_of(r)) mine.push_back(m);
      }
      for (const auto& batch : batches_by_shape(w.routing(), mine, o.max_batch)) w.compute(r, newton_schulz(batch, w.routing()));
    }
    zero1_all_to_all(w, chunks[c], owner, false);
  }
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    w.on_own_shards(is_muon(w.routing(), p) ? OpKind::muon_update : OpKind::adamw, p, model.params[p].name);
  }
  return w.finish();
}

void check_owners(Strategy s, const Routing& routing, const Mesh& mesh, const std::vector<int>& owner) {
  const StrategyTraits t = traits(s);
  if (!t.has_owners()) return;
  const int limit = t.ns_ranks == NsRanks::owner ? mesh.world() : mesh.shard;
  if (owner.size() != routing.muon_matrices.size()) {
    throw Error("plan: " + std::to_string(owner.size()) + " owners for " + std::to_string(routing.muon_matrices.size()) + " Muon matrices");
  }
  for (std::size_t m = 0; m < owner.size(); ++m) {
    if (owner[m] < 0 || owner[m] >= limit) {
      throw Error("plan: Muon matrix '" + routing.muon_matrices[m].name + "' has owner " + std::to_string(owner[m]) +
                  " outside [0, " + std::to_string(limit) + ")");
    }
  }
}

// Per replica of an owner strategy's mesh, its template (Plan::replica_template): a replica
// holding an owner (its node also holds the owner's sharded Newton-Schulz calls and all-to-alls)
// is its own; the others run the first of them. Empty unless at least a quarter of the replicas
// would run another's lists: validating a folded Plan copies its templates' lists
// (template_replicas) and the program keeps their classification, which for owner-striped at
// 1,024 GPUs of 16node.yaml (owners on 126 of 128 nodes) cost more than the two replicas saved
// (9.7 -> 11.7 s); at a quarter, dedicated at 1,024 GPUs (56 of 128 replicas shared) 10.2 ->
// 6.9 s and owner-striped at 2,048 (123 of 256) 26.8 -> 16.2 s (reports/sim-speed.md).
std::vector<int> owner_templates(const Mesh& mesh, const std::vector<int>& owner) {
  std::vector<char> holds(static_cast<std::size_t>(mesh.replicate), 0);
  for (int o : owner) holds[static_cast<std::size_t>(mesh.replica_of(o))] = 1;
  std::vector<int> templates(holds.size());
  int first_free = -1, shared = 0;
  for (int rep = 0; rep < mesh.replicate; ++rep) {
    if (holds[static_cast<std::size_t>(rep)]) {
      templates[static_cast<std::size_t>(rep)] = rep;
      continue;
    }
    if (first_free < 0) first_free = rep;
    shared += first_free != rep;
    templates[static_cast<std::size_t>(rep)] = first_free;
  }
  if (4 * shared < mesh.replicate) templates.clear();
  return templates;
}

}  // namespace

Plan build_plan(Strategy strategy, const ModelSpec& model, const Routing& routing, const Mesh& mesh,
                const std::vector<int>& owner, const PlanOptions& options) {
  check_owners(strategy, routing, mesh, owner);
  // The data-parallel builders treat every replica alike: replica rep's ranks get replica 0's
  // ops moved (core/plan/replica_symmetry.hpp; Plan::validate checks it), zero1-a2a's owners
  // being shard positions of every replica. The owner strategies spread owners over all ranks.
  const bool symmetric = mesh.replicate > 1 && traits(strategy).ns_ranks != NsRanks::owner;
  // The owner strategies, for a consumer that keeps the Plan folded (the simulator): the replicas
  // holding no owner's work run identical lists, written once (owner_templates).
  std::vector<int> templates;
  if (!symmetric && options.fold_replicas && options.keep_folded && traits(strategy).ns_ranks == NsRanks::owner) {
    templates = owner_templates(mesh, owner);
  }
  PlanWriter w(strategy, model, routing, mesh, symmetric && options.fold_replicas, options.keep_folded, templates);
  Plan plan;
  switch (strategy) {
    case Strategy::adamw: plan = build_adamw(w); break;
    case Strategy::ddp_redundant: plan = build_ddp_redundant(w, options); break;
    case Strategy::fsdp_gather: plan = build_fsdp_gather(w); break;
    case Strategy::zero1_a2a: plan = build_zero1_a2a(w, owner, options); break;
    case Strategy::dedicated:
    case Strategy::owner_striped: plan = build_owner_pipeline(w, owner, options); break;
  }
  plan.bytes_per_element = options.bytes_per_element;
  plan.replica_symmetric = symmetric || !templates.empty();
  const NsRanks ns_ranks = traits(strategy).ns_ranks;
  if (ns_ranks == NsRanks::owner) {
    plan.matrix_owner = owner;
  } else if (ns_ranks == NsRanks::owner_per_replica) {
    for (int pos : owner) plan.matrix_owner.push_back(mesh.rank(0, pos));
  } else {
    plan.matrix_owner.assign(routing.muon_matrices.size(), -1);
  }
  return plan;
}

}  // namespace dmuon
