#include "core/plan/striped_collectives.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace dmuon {
namespace {

struct Stage {
  bool forward = true;
  int bucket = -1;
  bool run_ahead = false;
  bool via_all_reduce = false;
  const ShardHoldings* holdings = nullptr;
};

Region intersect(const Region& a, const Region& b) {
  const std::int64_t begin = std::max(a.offset, b.offset);
  const std::int64_t end = std::min(a.offset + a.count, b.offset + b.count);
  return {a.param, begin, std::max<std::int64_t>(0, end - begin)};
}

// Chunk `chunk`, held by `peer`, to (forward: from) whichever GPUs hold its elements for
// Newton-Schulz: the owner, or the members of a sharded call.
void exchange_chunk(std::vector<Transfer>& out, const Region& region, const Region& chunk, int peer, int owner,
                    const Stage& stage) {
  const auto add = [&](int holder, const Region& piece) {
    if (holder == peer || piece.count == 0) return;
    out.push_back(stage.forward ? Transfer{holder, peer, piece, piece} : Transfer{peer, holder, piece, piece});
  };
  const auto it = stage.holdings ? stage.holdings->find({region.param, region.offset}) : ShardHoldings::const_iterator{};
  if (!stage.holdings || it == stage.holdings->end()) return add(owner, chunk);
  for (const NsShardHolding& h : it->second) {
    for (const Region& r : h.regions) add(h.rank, intersect(chunk, r));
  }
}

// Appends chunk s of each region that has one (rail s's share of an owner's matrices).
void append_chunks(const std::vector<Region>& regions, int shards, int s, std::vector<Region>& out) {
  for (const Region& region : regions) {
    const Region chunk = stripe_chunk(region, shards, s);
    if (chunk.count > 0) out.push_back(chunk);
  }
}

Op collective_op(OpKind kind, const Stage& stage, const std::string& label) {
  Op op;
  const bool forward = stage.forward;
  op.bucket = stage.bucket;
  op.run_ahead = forward && stage.run_ahead;
  op.kind = kind;
  op.phase = forward ? Phase::forward : Phase::backward;
  op.buffer = forward ? BufferKind::param : BufferKind::grad;
  op.reduce_op = ReduceOp::avg;
  op.label = label;
  return op;
}

// Stage A (forward) or C (backward) on each owner node: chunk s between the owner (or the
// members of a sharded call) and GPU s of its node, for every owner of the block on that node,
// as one all-to-all per node.
void owner_node_exchange(PlanWriter& w, const std::map<int, std::vector<Region>>& owners, const Stage& stage,
                         const std::string& label) {
  const Mesh& mesh = w.mesh();
  std::map<int, Op> by_node;
  for (const auto& [owner, regions] : owners) {
    const int node = mesh.replica_of(owner);
    auto it = by_node.find(node);
    if (it == by_node.end()) it = by_node.emplace(node, collective_op(OpKind::all_to_all, stage, label)).first;
    for (const Region& region : regions) {
      for (int s = 0; s < mesh.shard; ++s) {
        const Region chunk = stripe_chunk(region, mesh.shard, s);
        if (chunk.count > 0) exchange_chunk(it->second.transfers, region, chunk, mesh.rank(node, s), owner, stage);
      }
    }
  }
  for (auto& [node, op] : by_node) {
    if (!op.transfers.empty()) w.collective(w.shard_group(node), std::move(op));
  }
}

// Stage B: chunk s of each owner's regions across the replicas on rail s, rooted at GPU s of
// the owner's node.
void across_rails(PlanWriter& w, const std::map<int, std::vector<Region>>& owners, const Stage& stage,
                  const std::string& label) {
  const bool forward = stage.forward;
  const Mesh& mesh = w.mesh();
  if (!forward && stage.via_all_reduce) {  // one rootless all-reduce per rail for every owner
    for (int s = 0; s < mesh.shard; ++s) {
      Op op = collective_op(OpKind::all_reduce, stage, label);
      for (const auto& [owner, regions] : owners) append_chunks(regions, mesh.shard, s, op.regions);
      if (!op.regions.empty()) w.collective(w.replicate_group(s), std::move(op));
    }
    return;
  }
  for (const auto& [owner, regions] : owners) {
    for (int s = 0; s < mesh.shard; ++s) {
      Op op = collective_op(forward ? OpKind::broadcast : OpKind::reduce, stage, label);
      op.root = mesh.rank(mesh.replica_of(owner), s);
      op.via_all_reduce = stage.via_all_reduce;
      append_chunks(regions, mesh.shard, s, op.regions);
      if (!op.regions.empty()) w.collective(w.replicate_group(s), std::move(op));
    }
  }
}

// Stage C (forward: all-gather) or A (backward: reduce-scatter) inside every node, one per
// matrix (a member's part is one contiguous chunk). Replicas innermost: a collective's copies in
// the replicas are numbered consecutively, as PlanWriter's templates need (each node's list is
// the same either way).
void inside_nodes(PlanWriter& w, const std::map<int, std::vector<Region>>& owners, const Stage& stage,
                  const std::string& label) {
  const bool forward = stage.forward;
  const Mesh& mesh = w.mesh();
  for (const auto& [owner, regions] : owners) {
    for (const Region& region : regions) {
      Op op = collective_op(forward ? OpKind::all_gather : OpKind::reduce_scatter, stage, label);
      for (int s = 0; s < mesh.shard; ++s) op.parts.push_back(stripe_chunk(region, mesh.shard, s));
      for (int rep = 0; rep < mesh.replicate; ++rep) w.collective(w.shard_group(rep), op);
    }
  }
}

}  // namespace

Region stripe_chunk(const Region& region, int shards, int s) {
  const std::int64_t per = (region.count + shards - 1) / shards;
  const std::int64_t begin = std::min(region.count, per * s);
  const std::int64_t end = std::min(region.count, begin + per);
  return {region.param, region.offset + begin, end - begin};
}

void striped_block_collectives(PlanWriter& w, const std::map<int, std::vector<Region>>& owners, bool forward,
                               const std::string& label, int bucket, bool run_ahead, bool via_all_reduce,
                               const ShardHoldings* holdings) {
  if (w.mesh().replicate < 2 || w.mesh().shard < 2) {
    throw Error("plan: striped collectives need a 2-D mesh, got " + w.mesh().to_string());
  }
  const Stage stage{forward, bucket, run_ahead, via_all_reduce, holdings};
  if (forward) {
    owner_node_exchange(w, owners, stage, label);
    across_rails(w, owners, stage, label);
    inside_nodes(w, owners, stage, label);
  } else {
    inside_nodes(w, owners, stage, label);
    across_rails(w, owners, stage, label);
    owner_node_exchange(w, owners, stage, label);
  }
}

}  // namespace dmuon
