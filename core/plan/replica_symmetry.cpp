#include "core/plan/replica_symmetry.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "core/error.hpp"

namespace dmuon {

ReplicaMove::ReplicaMove(const Plan& plan) : replicas_(plan.mesh.replicate), shard_(plan.mesh.shard) {
  std::map<std::vector<int>, int> by_members;
  for (std::size_t g = 0; g < plan.groups.size(); ++g) by_members.emplace(plan.groups[g].ranks, static_cast<int>(g));
  image_.resize(plan.groups.size());
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    const auto& members = plan.groups[g].ranks;
    const bool inside = !members.empty() && replicas_ > 1 &&
                        std::all_of(members.begin(), members.end(), [&](int r) { return r >= 0 && r < shard_; });
    if (!inside) continue;
    image_[g].push_back(static_cast<int>(g));
    for (int rep = 1; rep < replicas_; ++rep) {
      std::vector<int> moved = members;
      for (int& r : moved) r += rep * shard_;
      const auto it = by_members.find(moved);
      if (it == by_members.end()) {
        throw Error("plan: group '" + plan.groups[g].name + "' of replica 0 has no copy in replica " + std::to_string(rep));
      }
      image_[g].push_back(it->second);
    }
  }
}

Op ReplicaMove::moved(const Op& op, int rep) const {
  Op out = op;
  if (rep == 0 || op.group < 0 || !local(op.group)) return out;
  out.group = group(op.group, rep);
  out.collective = op.collective + rep;
  if (out.root >= 0) out.root = rank(out.root, rep);
  for (Transfer& t : out.transfers) t.src = rank(t.src, rep), t.dst = rank(t.dst, rep);
  return out;
}

bool ReplicaMove::is_moved(const Op& mine, const Op& op, int rep) const {
  if (rep == 0 || op.group < 0 || !local(op.group)) return same_op(mine, op);
  // The fields moved() changes, then the others with those set alike (no copy of the op: this
  // runs on every op of a Plan).
  if (mine.group != group(op.group, rep) || mine.collective != op.collective + rep) return false;
  if (mine.root != (op.root >= 0 ? rank(op.root, rep) : op.root) || mine.transfers.size() != op.transfers.size()) return false;
  for (std::size_t k = 0; k < op.transfers.size(); ++k) {
    const Transfer& a = mine.transfers[k];
    const Transfer& b = op.transfers[k];
    if (a.src != rank(b.src, rep) || a.dst != rank(b.dst, rep) || !(a.from == b.from) || !(a.to == b.to)) return false;
  }
  return same_fields(mine, op, /*moved_ones=*/false);
}

bool same_op(const Op& a, const Op& b) { return same_fields(a, b, true); }

bool same_fields(const Op& a, const Op& b, bool moved_ones) {
  // Op's fields, all of them: a field added to Op must be compared here (the size check fails
  // the build until it is).
  static_assert(sizeof(Op) == 256, "Op changed: compare its new fields in same_op");
  if (moved_ones && (a.group != b.group || a.root != b.root || a.transfers != b.transfers || a.collective != b.collective)) {
    return false;
  }
  return a.kind == b.kind && a.stream == b.stream && a.phase == b.phase && a.deps == b.deps && a.label == b.label &&
         a.matrices == b.matrices && a.regions == b.regions && a.reduce_op == b.reduce_op && a.buffer == b.buffer &&
         a.parts == b.parts && a.bucket == b.bucket && a.run_ahead == b.run_ahead &&
         a.via_all_reduce == b.via_all_reduce && a.ns_column_begin == b.ns_column_begin &&
         a.ns_column_end == b.ns_column_end && a.ns_product_begin == b.ns_product_begin &&
         a.ns_product_end == b.ns_product_end && a.flops == b.flops && a.memory_bytes == b.memory_bytes &&
         a.payload_bytes == b.payload_bytes;
}

void unfold(Plan& plan) {
  if (!plan.folded) return;
  const ReplicaMove move(plan);
  const int S = plan.mesh.shard;
  plan.ranks.resize(static_cast<std::size_t>(plan.mesh.world()));
  for (int r = S; r < plan.mesh.world(); ++r) {
    const auto& first = plan.ranks[static_cast<std::size_t>(r % S)];
    auto& mine = plan.ranks[static_cast<std::size_t>(r)];
    mine.reserve(first.size());
    for (const Op& op : first) mine.push_back(move.moved(op, r / S));
  }
  plan.folded = false;
}

Plan unfolded(const Plan& plan) {
  Plan out = plan;
  unfold(out);
  return out;
}

Plan replica_zero(const Plan& plan) {
  Plan q;
  q.strategy = plan.strategy;
  q.mesh = {1, plan.mesh.shard};
  q.bytes_per_element = plan.bytes_per_element;
  q.matrix_owner = plan.matrix_owner;
  q.groups.reserve(plan.groups.size());
  for (const CommGroup& g : plan.groups) {
    CommGroup cut{g.name, {}};
    for (int r : g.ranks) {
      if (r < plan.mesh.shard) cut.ranks.push_back(r);
    }
    q.groups.push_back(std::move(cut));
  }
  const auto S = std::min(plan.ranks.size(), static_cast<std::size_t>(plan.mesh.shard));
  q.ranks.assign(plan.ranks.begin(), plan.ranks.begin() + static_cast<std::ptrdiff_t>(S));
  return q;
}

void check_replica_symmetric(const Plan& plan) {
  const ReplicaMove move(plan);
  const int S = plan.mesh.shard;
  for (int r = S; r < static_cast<int>(plan.ranks.size()); ++r) {
    const int rep = r / S;
    const auto& mine = plan.ranks[static_cast<std::size_t>(r)];
    const auto& first = plan.ranks[static_cast<std::size_t>(r % S)];
    if (mine.size() != first.size()) {
      throw Error("plan: marked replica-symmetric, but rank " + std::to_string(r) + " has " + std::to_string(mine.size()) +
                  " ops and rank " + std::to_string(r % S) + " of replica 0 has " + std::to_string(first.size()));
    }
    for (std::size_t i = 0; i < mine.size(); ++i) {
      if (!move.is_moved(mine[i], first[i], rep)) {
        throw Error("plan: marked replica-symmetric, but rank " + std::to_string(r) + " op " + std::to_string(i) + " ('" +
                    mine[i].label + "') is not rank " + std::to_string(r % S) + "'s op " + std::to_string(i) +
                    " moved to replica " + std::to_string(rep));
      }
    }
  }
}

}  // namespace dmuon
