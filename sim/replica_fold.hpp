// The step program of a replica-symmetric Plan (core/plan/replica_symmetry.hpp) from replica 0's
// ranks alone (issue 15): RankBuilder builds ranks (0, s) only, and every other replica's
// collectives and op lists are replica 0's, moved. The result is exactly what building every
// rank gives (tests/test_sim_replica_fold.cpp compares the two field by field), because:
// - building rank (rep, s) reads only its own Plan list, which is rank (0, s)'s moved, so it
//   makes the same ops naming the moved collectives;
// - a collective is created on first sight, ranks in order: replica rep's new ones are the copies
//   of replica 0's collectives of groups inside replica 0, in the order replica 0 created them,
//   after everything replica rep - 1 created in the same pass (add_copies, after each pass);
// - the launch-order constraints of replica rep are replica 0's moved (add_edges);
// - a unit's launches are sorted by their global position: the one thing moving can change.
//   order_kept checks that the copies of every pair of neighbours keep their order; when one does
//   not, the caller builds every rank instead.
#pragma once
#include <set>
#include <utility>
#include <vector>

#include "core/plan/replica_symmetry.hpp"
#include "sim/step_program.hpp"

namespace dmuon::sim {

class ReplicaFold {
 public:
  explicit ReplicaFold(const Plan& plan) : plan_(plan), move_(plan) {}

  // Ranks RankBuilder builds: replica 0's.
  int built_ranks() const { return move_.shard(); }
  // Appends every other replica's copy of the collectives [from, prog.collectives.size()) of
  // groups inside replica 0, replica by replica. False (nothing added) when a collective's group
  // cannot be told by its name (two groups of one name, or none of its members): the caller
  // builds every rank.
  bool add_copies(StepProgram& prog, std::size_t from);
  // The copies of replica 0's launch-order constraints.
  void add_edges(std::set<std::pair<int, int>>& edges) const;
  // Whether the copies of each pair (a, b) of neighbours in a unit's sorted launches (a first)
  // keep their order under `positions`.
  bool order_kept(const std::vector<std::pair<int, int>>& neighbours, const std::vector<int>& positions) const;
  // Rank (0, s)'s list as rank (rep, s) runs it.
  std::vector<SimOp> moved(const std::vector<SimOp>& ops, int rep) const;
  // The copies (StepProgram::replica_copies) of the `count` collectives of one step.
  std::vector<std::vector<int>> take_copies(std::size_t count) {
    copies_.resize(count);
    return std::move(copies_);
  }
  // Collective c as replica rep sees it.
  int collective(int c, int rep) const {
    const auto k = static_cast<std::size_t>(c);
    if (rep == 0 || k >= copies_.size() || copies_[k].empty()) return c;
    return copies_[k][static_cast<std::size_t>(rep - 1)];
  }

 private:
  const Plan& plan_;
  ReplicaMove move_;
  // Per collective of a group inside replica 0: its copies in replicas 1..R-1; empty otherwise.
  std::vector<std::vector<int>> copies_;
};

}  // namespace dmuon::sim
