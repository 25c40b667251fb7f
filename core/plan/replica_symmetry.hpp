// Replica-symmetric Plans (issue 15). On an R x S mesh (HSDP: R replicas of S shard positions)
// the data-parallel strategies (adamw, ddp-redundant, fsdp-gather, zero1-a2a) give rank
// (rep, s) exactly rank (0, s)'s ops moved to replica rep: a collective of a group inside replica
// 0 becomes the same collective of that group's copy in replica rep (ranks + rep x S), with
// collective id + rep (the builders number a collective's R replica copies consecutively,
// replica 0 first) and the ranks it names (root, transfers) moved alike; every other op (compute,
// collectives of groups that span replicas: world, replicate[s]) is the same op. Such a Plan says
// so (Plan::replica_symmetric), and a consumer may build what replica 0 needs once and move it
// instead of building every rank (sim/replica_fold.hpp).
// The owner strategies generalise it with templates (Plan::replica_template): the replicas that
// hold no owner's work run identical lists, those of the first of them (their template) moved, a
// collective of a group inside template t becoming id + (rep - t) in replica rep (again the
// builders' consecutive numbering); a replica holding an owner's work is its own template.
#pragma once
#include <vector>

#include "core/plan/plan.hpp"

namespace dmuon {

class ReplicaMove {
 public:
  // Throws dmuon::Error when the Plan's templates are not templates (Plan::replica_template: a
  // replica's template later than it, or not its own template) or a group inside a template
  // replica has no copy in some replica that runs the template's lists.
  explicit ReplicaMove(const Plan& plan);

  int replicas() const { return replicas_; }
  int shard() const { return shard_; }
  int template_of(int rep) const { return template_[static_cast<std::size_t>(rep)]; }
  // Replicas that run template t's lists (t included; 0 when t is not a template).
  int copies_of(int t) const { return count_[static_cast<std::size_t>(t)]; }
  // Replica rep's place among the replicas of its template, in replica order (the template: 0).
  int position(int rep) const { return position_[static_cast<std::size_t>(rep)]; }
  // Whether the group lies inside a template replica (its collectives move with the replica),
  // and which one (-1: spans replicas, or lies inside a replica that is no template).
  bool local(int group) const { return home(group) >= 0; }
  int home(int group) const {
    const auto g = static_cast<std::size_t>(group);
    return g < home_.size() ? home_[g] : -1;
  }
  // The copy in replica `rep` of a group inside rep's template; any other group itself.
  int group(int group, int rep) const {
    const int h = home(group);
    if (h < 0 || template_of(rep) != h || rep == h) return group;
    return image_[static_cast<std::size_t>(group)][static_cast<std::size_t>(position(rep))];
  }
  // Rank `rank` moved to replica `rep`, same shard position.
  int rank(int rank, int rep) const { return rank + (rep - rank / shard_) * shard_; }
  // A template rank's op as rank (rep, s) of a replica running that template's lists runs it.
  Op moved(const Op& op, int rep) const;
  // same_op(mine, moved(op, rep)), without the copy.
  bool is_moved(const Op& mine, const Op& op, int rep) const;

 private:
  int replicas_ = 1, shard_ = 1;
  std::vector<int> template_, position_, count_;  // per replica
  std::vector<int> home_;                         // per group: its template replica, or -1
  std::vector<std::vector<int>> image_;  // per group inside a template: its copy in each of the
                                         // template's replicas (by position), empty when alone
};

// Every op of every rank against its template rank's, moved. Throws dmuon::Error naming the
// first rank and op that differ (for Plans marked replica_symmetric: Plan::validate calls it).
void check_replica_symmetric(const Plan& plan);

// A folded Plan (Plan::folded) with every rank's list: the templates' moved to the others.
void unfold(Plan& plan);
Plan unfolded(const Plan& plan);

// The template replicas of a replica-symmetric Plan as a Plan of their own: their ranks' lists,
// a T x S mesh (template i, in replica order, becomes replica i: every rank the Plan names
// renumbered so), every group cut to its members in templates. With the Plan checked
// replica-symmetric, it is valid (Plan::validate) exactly when the whole Plan is: each replica's
// lists are its template's moved, so a collective of a replica's own group matches on its
// members as its template's original does, one of a group across replicas has the same op on
// every member, members issue a group's collectives in the same order, and the ranks, all moving
// in step with their templates, deadlock exactly when the templates' do (a collective completes
// when its members reach it, whatever the interleaving); updates cover the same elements in
// every replica of a template. Of the data-parallel strategies this is replica 0.
// (What it cannot see, a template that runs an owner's work for several replicas, validate
// checks apart.)
Plan template_replicas(const Plan& plan);

// Every field of two ops equal (Op has no operator==: its label and vectors make it costly).
bool same_op(const Op& a, const Op& b);
// The same, leaving out the fields a move to another replica changes (group, root, transfers,
// collective) unless `moved_ones`.
bool same_fields(const Op& a, const Op& b, bool moved_ones);

}  // namespace dmuon
