// dedicated (DMuon) and owner-striped: the owner strategies' builder. Every Muon matrix has an
// owner that runs its Newton-Schulz; owner-striped may share that call among GPUs of the
// owner's node (core/plan/ns_sharding.hpp).
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "core/plan/builder_parts.hpp"
#include "core/error.hpp"
#include "core/plan/ns_sharding.hpp"
#include "core/plan/striped_collectives.hpp"

namespace dmuon {
namespace {
using namespace builder;

// Broadcast (forward) or reduce-avg (backward) of one owner's matrices of one layer, in one or
// two stages: on a 2-D mesh, across the owner's replicate group and within each shard group.
void dedicated_collectives(PlanWriter& w, int owner, const std::vector<Region>& regions, bool forward,
                           const std::string& label, bool run_ahead) {
  const Mesh& mesh = w.mesh();
  const int shard_index = mesh.shard_index_of(owner);
  Op op;
  op.kind = forward ? OpKind::broadcast : OpKind::reduce;
  op.phase = forward ? Phase::forward : Phase::backward;
  op.buffer = forward ? BufferKind::param : BufferKind::grad;
  op.reduce_op = ReduceOp::avg;
  op.regions = regions;
  op.label = label;
  op.run_ahead = forward && run_ahead;
  auto across_replicas = [&] {
    if (mesh.replicate == 1) return;
    op.root = owner;
    w.collective(w.replicate_group(shard_index), op);
  };
  auto within_shard_groups = [&] {
    for (int rep = 0; rep < mesh.replicate; ++rep) {
      op.root = mesh.rank(rep, shard_index);
      w.collective(w.shard_group(rep), op);
    }
  };
  if (forward) {
    across_replicas();
    within_shard_groups();
  } else {
    within_shard_groups();
    across_replicas();
  }
}

using BlockOwners = std::map<int, std::vector<Region>>;  // owner -> its regions in one block

// One block's forward broadcast or backward reduce of every owner's matrices, as dedicated
// (DMuon) sends them; owner-striped lets the broadcasts run ahead (Op::run_ahead) here too.
void block_collectives(PlanWriter& w, const BlockOwners& owners, bool forward, const std::string& label,
                       const PlanOptions& o) {
  const bool run_ahead = traits(w.plan().strategy).rail_striped && o.striped_run_ahead;
  for (const auto& [o_rank, regions] : owners) dedicated_collectives(w, o_rank, regions, forward, label, run_ahead);
}

// owner-striped on a 2-D mesh: consecutive blocks joined into buckets of at least
// o.striped_bucket_bytes_per_rail (the last one may be short), each bucket's collectives
// rail-striped (core/plan/striped_collectives.hpp): forward buckets in block order, backward in
// reverse; the forward ones run ahead of the compute when o.striped_run_ahead.
void striped_collectives(PlanWriter& w, const std::vector<std::pair<std::string, BlockOwners>>& blocks,
                         const PlanOptions& o, const ShardHoldings& holdings) {
  const std::int64_t bytes_per_rail = o.striped_bucket_bytes_per_rail;
  const int bytes_per_element = o.bytes_per_element;
  const bool via_all_reduce = w.mesh().replicate >= o.striped_all_reduce_from_nodes;
  struct Bucket {
    std::string label;
    BlockOwners owners;
    std::int64_t elements = 0;
  };
  std::vector<Bucket> buckets;
  const std::int64_t rails = w.mesh().shard;
  for (const auto& [block, owners] : blocks) {
    if (buckets.empty() || buckets.back().elements * bytes_per_element / rails >= bytes_per_rail) {
      buckets.push_back({"block " + block, {}, 0});
    } else if (buckets.back().label.find("..") == std::string::npos) {
      buckets.back().label += ".." + block;
    } else {
      buckets.back().label = buckets.back().label.substr(0, buckets.back().label.find("..") + 2) + block;
    }
    for (const auto& [o_rank, regions] : owners) {
      auto& mine = buckets.back().owners[o_rank];
      mine.insert(mine.end(), regions.begin(), regions.end());
      buckets.back().elements += region_elements(regions);
    }
  }
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    striped_block_collectives(w, buckets[b].owners, true, buckets[b].label, static_cast<int>(b), o.striped_run_ahead,
                              via_all_reduce, &holdings);
  }
  for (std::size_t b = buckets.size(); b-- > 0;) {
    striped_block_collectives(w, buckets[b].owners, false, buckets[b].label, static_cast<int>(buckets.size() + b), false,
                              via_all_reduce, &holdings);
  }
}

// dedicated (DMuon) and owner-striped: each Muon matrix lives whole on its owner; forward
// broadcast from the owner (coalesced per layer and owner), backward reduce-avg to the owner,
// owner-only momentum, batched Newton-Schulz and update; other parameters stay with FSDP2 and
// AdamW on shards. The two differ only in how the broadcasts and reduces travel: owner-striped
// stripes them over every rail of a 2-D mesh (on one node, or one GPU per node, the striped path
// would move the same bytes over the same links in more steps, so it sends dedicated's there).
// The optimizer phase of the owner strategies: each rank's momentum and update over what it
// holds, sharded Newton-Schulz calls first (their members wait for each other, so a rank runs
// them before its own batches; every rank issues them in matrix order, which cannot deadlock),
// then its own matrices' batched calls.
void owner_optimizer(PlanWriter& w, const std::vector<int>& owner, const ShardHoldings& holdings, const PlanOptions& o) {
  const Routing& routing = w.routing();
  // Per rank: (matrix, regions) it holds, in matrix order; the matrices it owns whole.
  std::vector<std::vector<std::pair<std::size_t, std::vector<Region>>>> held(static_cast<std::size_t>(w.mesh().world()));
  std::vector<Matrices> whole(held.size());
  for (std::size_t m = 0; m < routing.muon_matrices.size(); ++m) {
    const Region region = matrix_region(routing, m);
    const auto it = holdings.find({region.param, region.offset});
    if (it == holdings.end()) {
      whole[static_cast<std::size_t>(owner[m])].push_back(m);
      held[static_cast<std::size_t>(owner[m])].push_back({m, {region}});
      continue;
    }
    for (const NsShardHolding& h : it->second) held[static_cast<std::size_t>(h.rank)].push_back({m, h.regions});
  }
  auto each_region = [&](OpKind kind) {
    for (int r = 0; r < w.mesh().world(); ++r) {
      for (const auto& [m, regions] : held[static_cast<std::size_t>(r)]) {
        Op op = elementwise(kind, regions.front(), routing.muon_matrices[m].name);
        op.regions = regions;
        w.compute(r, std::move(op));
      }
    }
  };
  each_region(OpKind::momentum);
  for (std::size_t m = 0; m < routing.muon_matrices.size(); ++m) {
    const Region region = matrix_region(routing, m);
    const auto it = holdings.find({region.param, region.offset});
    if (it == holdings.end()) continue;
    std::vector<int> ranks;
    std::vector<Op> ops;
    const bool split = !o.ns_split_products.empty() && o.ns_split_products.at(m);
    for (const NsShardHolding& h : it->second) {
      ranks.push_back(h.rank);
      Op op = newton_schulz({m}, routing);
      op.ns_column_begin = h.column_begin;
      op.ns_column_end = h.column_end;
      if (split) {
        const int k = static_cast<int>(it->second.size());
        const int j = static_cast<int>(ops.size());
        std::tie(op.ns_product_begin, op.ns_product_end) = ns_product_columns(ns_wide_rows(routing.muon_matrices[m]), k, j);
      }
      ops.push_back(std::move(op));
    }
    w.joint_compute(w.group_of(ranks, "ns[" + std::to_string(ranks.front()) + ".." + std::to_string(ranks.back()) + "]"),
                    std::move(ops));
  }
  for (int r = 0; r < w.mesh().world(); ++r) {
    for (const auto& batch : batches_by_shape(routing, whole[static_cast<std::size_t>(r)], o.max_batch)) {
      w.compute(r, newton_schulz(batch, routing));
    }
  }
  each_region(OpKind::muon_update);
}

// Sharded Newton-Schulz calls of PlanOptions::ns_shards (owner-striped only), by matrix region.
ShardHoldings shard_holdings(PlanWriter& w, const std::vector<int>& owner, const PlanOptions& o) {
  ShardHoldings out;
  if (o.ns_shards.empty()) return out;
  const Routing& routing = w.routing();
  if (o.ns_shards.size() != routing.muon_matrices.size() || !traits(w.plan().strategy).rail_striped) {
    throw Error("plan: ns_shards (" + std::to_string(o.ns_shards.size()) + " entries) needs strategy owner-striped and one entry per Muon matrix (" +
                std::to_string(routing.muon_matrices.size()) + ")");
  }
  if (!o.ns_split_products.empty() && o.ns_split_products.size() != o.ns_shards.size()) {
    throw Error("plan: ns_split_products has " + std::to_string(o.ns_split_products.size()) + " entries, ns_shards " +
                std::to_string(o.ns_shards.size()) + ": one per Muon matrix or none");
  }
  const Mesh& mesh = w.mesh();
  for (std::size_t m = 0; m < o.ns_shards.size(); ++m) {
    const int k = o.ns_shards[m];
    if (k == 1) continue;
    const MuonMatrix& mm = routing.muon_matrices[m];
    if (k < 1 || mesh.shard_index_of(owner[m]) + k > mesh.shard || !ns_shardable(ns_wide_columns(mm), k)) {
      throw Error("plan: ns_shards of matrix '" + mm.name + "' is " + std::to_string(k) + ": needs ranks " + std::to_string(owner[m]) +
                  " .. +" + std::to_string(k - 1) + " inside one node and a column for each");
    }
    if (!o.ns_split_products.empty() && o.ns_split_products[m] && !ns_shardable(ns_wide_rows(mm), k)) {
      throw Error("plan: ns_split_products of matrix '" + mm.name + "': its " + std::to_string(ns_wide_rows(mm)) +
                  " product columns cannot give each of " + std::to_string(k) + " members one");
    }
    const Region region = matrix_region(routing, m);
    out[{region.param, region.offset}] = ns_shard_holdings(routing, m, owner[m], k);
  }
  return out;
}

}  // namespace

// dedicated (DMuon) and owner-striped: each Muon matrix lives whole on its owner; forward
// broadcast from the owner (coalesced per layer and owner), backward reduce-avg to the owner,
// owner-only momentum, batched Newton-Schulz and update; other parameters stay with FSDP2 and
// AdamW on shards. The two differ only in how the broadcasts and reduces travel: owner-striped
// stripes them over every rail of a 2-D mesh (on one node, or one GPU per node, the striped path
// would move the same bytes over the same links in more steps, so it sends dedicated's there),
// and owner-striped may shard a matrix's Newton-Schulz over GPUs of its owner's node: they then
// hold its columns (momentum, update) in place of the owner.
Plan build_owner_pipeline(PlanWriter& w, const std::vector<int>& owner, const PlanOptions& o) {
  const ModelSpec& model = w.model();
  const Routing& routing = w.routing();
  const Mesh& mesh = w.mesh();
  const bool striped = traits(w.plan().strategy).rail_striped && mesh.replicate > 1 && mesh.shard > 1;
  const ShardHoldings holdings = shard_holdings(w, owner, o);
  // Blocks (tower, layer) in the order their first matrix appears, which is the forward order;
  // keying on the layer index alone would put layer i of every tower in one launch.
  std::vector<std::pair<std::string, BlockOwners>> blocks;
  for (std::size_t m = 0; m < routing.muon_matrices.size(); ++m) {
    const std::string key = layer_key(model, routing.muon_matrices[m]);
    auto it = std::find_if(blocks.begin(), blocks.end(), [&](const auto& b) { return b.first == key; });
    if (it == blocks.end()) it = blocks.insert(blocks.end(), {key, {}});
    const Region region = matrix_region(routing, m);
    const auto sharded = holdings.find({region.param, region.offset});
    if (striped || sharded == holdings.end()) {  // striped: stage A / C reach the members
      it->second[owner[m]].push_back(region);
      continue;
    }
    for (const NsShardHolding& h : sharded->second) {  // one node: each member's own collectives
      auto& mine = it->second[h.rank];
      mine.insert(mine.end(), h.regions.begin(), h.regions.end());
    }
  }
  std::set<std::size_t> fsdp_params;
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    if (!is_muon(routing, p)) fsdp_params.insert(p);
  }
  for (std::size_t p : fsdp_params) w.fsdp_all_gather(p);
  if (striped) {
    striped_collectives(w, blocks, o, holdings);
  } else {
    for (const auto& [block, owners] : blocks) block_collectives(w, owners, true, "block " + block, o);
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) block_collectives(w, it->second, false, "block " + it->first, o);
  }
  for (auto it = fsdp_params.rbegin(); it != fsdp_params.rend(); ++it) w.fsdp_reduce_gradient(*it);
  owner_optimizer(w, owner, holdings, o);
  for (std::size_t p : fsdp_params) w.on_own_shards(OpKind::adamw, p, model.params[p].name);
  return w.finish();
}

}  // namespace dmuon
