// Replica-symmetric Plans (issue 15). On an R x S mesh (HSDP: R replicas of S shard positions)
// the data-parallel strategies (adamw, ddp-redundant, fsdp-gather, zero1-a2a) give rank
// (rep, s) exactly rank (0, s)'s ops moved to replica rep: a collective of a group inside replica
// 0 becomes the same collective of that group's copy in replica rep (ranks + rep x S), with
// collective id + rep (the builders number a collective's R replica copies consecutively,
// replica 0 first) and the ranks it names (root, transfers) moved alike; every other op (compute,
// collectives of groups that span replicas: world, replicate[s]) is the same op. Such a Plan says
// so (Plan::replica_symmetric), and a consumer may build what replica 0 needs once and move it
// instead of building every rank (sim/replica_fold.hpp).
#pragma once
#include <vector>

#include "core/plan/plan.hpp"

namespace dmuon {

class ReplicaMove {
 public:
  // Throws dmuon::Error when a group inside replica 0 has no copy in some replica among the
  // Plan's groups.
  explicit ReplicaMove(const Plan& plan);

  int replicas() const { return replicas_; }
  int shard() const { return shard_; }
  // Whether the group lies inside replica 0 (its collectives move with the replica).
  bool local(int group) const { return image_[static_cast<std::size_t>(group)].size() > 0; }
  // The copy of a group inside replica 0 in replica `rep`; any other group itself.
  int group(int group, int rep) const {
    const auto& img = image_[static_cast<std::size_t>(group)];
    return img.empty() ? group : img[static_cast<std::size_t>(rep)];
  }
  int rank(int rank, int rep) const { return rank + rep * shard_; }
  // Rank (0, s)'s op as rank (rep, s) runs it.
  Op moved(const Op& op, int rep) const;
  // same_op(mine, moved(op, rep)), without the copy.
  bool is_moved(const Op& mine, const Op& op, int rep) const;

 private:
  int replicas_ = 1, shard_ = 1;
  std::vector<std::vector<int>> image_;  // per group: its copy in each replica, empty = spans replicas
};

// Every op of every rank against its replica-0 counterpart, moved. Throws dmuon::Error naming the
// first rank and op that differ (for Plans marked replica_symmetric: Plan::validate calls it).
void check_replica_symmetric(const Plan& plan);

// A folded Plan (Plan::folded) with every rank's list: replica 0's moved to the others.
void unfold(Plan& plan);
Plan unfolded(const Plan& plan);

// Replica 0 of a replica-symmetric Plan as a Plan of its own: its ranks' lists, a 1 x S mesh,
// every group cut to its members in replica 0. With the Plan checked replica-symmetric, it is
// valid (Plan::validate) exactly when the whole Plan is: each replica's lists are replica 0's
// moved, so a collective of a replica's own group matches on its members as its replica-0
// original does, one of a group across replicas has the same op on every member, members issue
// a group's collectives in the same order, and the ranks, all moving in step, deadlock exactly
// when replica 0's do (a collective completes when its members reach it, whatever the
// interleaving); updates cover the same elements in every replica.
Plan replica_zero(const Plan& plan);

// Every field of two ops equal (Op has no operator==: its label and vectors make it costly).
bool same_op(const Op& a, const Op& b);
// The same, leaving out the fields a move to another replica changes (group, root, transfers,
// collective) unless `moved_ones`.
bool same_fields(const Op& a, const Op& b, bool moved_ones);

}  // namespace dmuon
