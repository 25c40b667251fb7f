#include "core/plan/replica_symmetry.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "core/error.hpp"

namespace dmuon {

ReplicaMove::ReplicaMove(const Plan& plan) : replicas_(plan.mesh.replicate), shard_(plan.mesh.shard) {
  const auto R = static_cast<std::size_t>(replicas_);
  template_.resize(R);
  position_.resize(R);
  count_.assign(R, 0);
  for (int rep = 0; rep < replicas_; ++rep) {
    // Replica 0 for all unless the Plan names templates (a Plan not marked replica-symmetric too:
    // its consumer asks how replica 0's lists would move).
    const auto template_of = [&](int r) { return plan.replica_template.empty() ? 0 : plan.replica_template[static_cast<std::size_t>(r)]; };
    const int t = template_of(rep);
    if (t < 0 || t > rep || template_of(t) != t) {
      throw Error("plan: replica " + std::to_string(rep) + "'s template " + std::to_string(t) +
                  " is not a template replica at or before it");
    }
    template_[static_cast<std::size_t>(rep)] = t;
    position_[static_cast<std::size_t>(rep)] = count_[static_cast<std::size_t>(t)]++;
  }
  home_.assign(plan.groups.size(), -1);
  image_.resize(plan.groups.size());
  std::map<std::vector<int>, int> by_members;  // only asked for groups of templates with copies
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    const auto& members = plan.groups[g].ranks;
    if (members.empty() || replicas_ < 2 || members.front() < 0) continue;
    const int t = members.front() / shard_;
    const bool inside = std::all_of(members.begin(), members.end(), [&](int r) { return r >= 0 && r / shard_ == t; });
    if (!inside || t >= replicas_ || template_[static_cast<std::size_t>(t)] != t) continue;
    home_[g] = t;
    if (count_[static_cast<std::size_t>(t)] < 2) continue;
    if (by_members.empty()) {
      for (std::size_t k = 0; k < plan.groups.size(); ++k) by_members.emplace(plan.groups[k].ranks, static_cast<int>(k));
    }
    image_[g].assign(static_cast<std::size_t>(count_[static_cast<std::size_t>(t)]), -1);
    for (int rep = t; rep < replicas_; ++rep) {
      if (template_[static_cast<std::size_t>(rep)] != t) continue;
      std::vector<int> moved = members;
      for (int& r : moved) r += (rep - t) * shard_;
      const auto it = by_members.find(moved);
      if (it == by_members.end()) {
        throw Error("plan: group '" + plan.groups[g].name + "' of replica " + std::to_string(t) + " has no copy in replica " +
                    std::to_string(rep));
      }
      image_[g][static_cast<std::size_t>(position_[static_cast<std::size_t>(rep)])] = it->second;
    }
  }
}

Op ReplicaMove::moved(const Op& op, int rep) const {
  Op out = op;
  const int h = op.group < 0 ? -1 : home(op.group);
  if (h < 0 || rep == h) return out;
  out.group = group(op.group, rep);
  out.collective = op.collective + (rep - h);
  if (out.root >= 0) out.root = rank(out.root, rep);
  for (Transfer& t : out.transfers) t.src = rank(t.src, rep), t.dst = rank(t.dst, rep);
  return out;
}

bool ReplicaMove::is_moved(const Op& mine, const Op& op, int rep) const {
  const int h = op.group < 0 ? -1 : home(op.group);
  if (h < 0 || rep == h) return same_op(mine, op);
  // The fields moved() changes, then the others with those set alike (no copy of the op: this
  // runs on every op of a Plan).
  if (mine.group != group(op.group, rep) || mine.collective != op.collective + (rep - h)) return false;
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
  plan.ranks.resize(static_cast<std::size_t>(plan.mesh.world()));
  for (int r = 0; r < plan.mesh.world(); ++r) {
    const int from = plan.template_rank(r);
    if (from == r) continue;
    const auto& first = plan.ranks[static_cast<std::size_t>(from)];
    auto& mine = plan.ranks[static_cast<std::size_t>(r)];
    mine.clear();
    mine.reserve(first.size());
    for (const Op& op : first) mine.push_back(move.moved(op, plan.mesh.replica_of(r)));
  }
  plan.folded = false;
}

Plan unfolded(const Plan& plan) {
  Plan out = plan;
  unfold(out);
  return out;
}

Plan template_replicas(const Plan& plan) {
  const int S = plan.mesh.shard;
  std::vector<int> index(static_cast<std::size_t>(plan.mesh.replicate), -1);  // replica -> template index
  int T = 0;
  for (int rep = 0; rep < plan.mesh.replicate; ++rep) {
    if (plan.template_of(rep) == rep) index[static_cast<std::size_t>(rep)] = T++;
  }
  // A template rank renumbered; -1 for a rank of another replica.
  const auto renumber = [&](int r) {
    if (r < 0 || r >= plan.mesh.world()) return -1;
    const int i = index[static_cast<std::size_t>(r / S)];
    return i < 0 ? -1 : i * S + r % S;
  };
  // `op` names the op for the error (nullptr: matrix_owner); the message is built only then.
  const auto named = [&](int r, const Op* op) {
    const int out = renumber(r);
    if (out < 0) {
      throw Error("plan: " + (op ? "op '" + op->label + "'" : std::string("matrix_owner")) + " names rank " + std::to_string(r) +
                  ", outside every template replica");
    }
    return out;
  };
  Plan q;
  q.strategy = plan.strategy;
  q.mesh = {T, S};
  q.bytes_per_element = plan.bytes_per_element;
  for (int o : plan.matrix_owner) q.matrix_owner.push_back(o < 0 ? o : named(o, nullptr));
  q.groups.reserve(plan.groups.size());
  for (const CommGroup& g : plan.groups) {
    CommGroup cut{g.name, {}};
    for (int r : g.ranks) {
      if (renumber(r) >= 0) cut.ranks.push_back(renumber(r));
    }
    q.groups.push_back(std::move(cut));
  }
  q.ranks.resize(static_cast<std::size_t>(T * S));
  for (int r = 0; r < plan.mesh.world() && r < static_cast<int>(plan.ranks.size()); ++r) {
    const int to = renumber(r);
    if (to < 0) continue;
    auto& mine = q.ranks[static_cast<std::size_t>(to)];
    mine = plan.ranks[static_cast<std::size_t>(r)];
    for (Op& op : mine) {
      if (op.root >= 0) op.root = named(op.root, &op);
      for (Transfer& t : op.transfers) t.src = named(t.src, &op), t.dst = named(t.dst, &op);
    }
  }
  return q;
}

void check_replica_symmetric(const Plan& plan) {
  const ReplicaMove move(plan);
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    const int from = plan.template_rank(r);
    if (from == r) continue;
    const int rep = plan.mesh.replica_of(r);
    const auto& mine = plan.ranks[static_cast<std::size_t>(r)];
    const auto& first = plan.ranks[static_cast<std::size_t>(from)];
    if (mine.size() != first.size()) {
      throw Error("plan: marked replica-symmetric, but rank " + std::to_string(r) + " has " + std::to_string(mine.size()) +
                  " ops and rank " + std::to_string(from) + " of its template replica has " + std::to_string(first.size()));
    }
    for (std::size_t i = 0; i < mine.size(); ++i) {
      if (!move.is_moved(mine[i], first[i], rep)) {
        throw Error("plan: marked replica-symmetric, but rank " + std::to_string(r) + " op " + std::to_string(i) + " ('" +
                    mine[i].label + "') is not rank " + std::to_string(from) + "'s op " + std::to_string(i) +
                    " moved to replica " + std::to_string(rep));
      }
    }
  }
}

}  // namespace dmuon
