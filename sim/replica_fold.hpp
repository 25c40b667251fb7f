// The step program of a replica-symmetric Plan (core/plan/replica_symmetry.hpp) from its template
// replicas alone (issue 15): RankBuilder builds the templates' ranks only (replica 0's for the
// data-parallel strategies; for the owner strategies each replica holding an owner's work and the
// first of the others), and every other replica's collectives and op lists are its template's,
// moved. The result is exactly what building every rank gives (tests/test_sim_replica_fold.cpp
// compares the two field by field), because:
// - building rank (rep, s) reads only its own Plan list, which is its template's moved, so it
//   makes the same ops naming the moved collectives;
// - a collective is created on first sight, ranks in order: replica rep's new ones are the copies
//   of its template's collectives of groups inside the template, in the order the template
//   created them (the shared ones were all created by replica 0, which has a member of each),
//   after everything replicas before rep created in the same pass: a pass (each_replica) walks
//   the replicas in order, building a template's ranks or adding a replica's copies;
// - the launch-order constraints of replica rep are its template's moved (add_edges);
// - a unit's launches are sorted by their global position (ties by creation: a copy of a later
//   replica is created later), the one thing moving can change. In the second pass, a replica
//   whose copies of its template's neighbouring launches would not keep their order is built
//   instead (RankBuilder::build_moved: its template's classification, collectives moved, sorted
//   by its own positions) and becomes a template of its own ("promoted"), so the lists stay
//   exactly what building every rank gives. (The owner strategies at 2,048 GPUs: the backward
//   all-reduce of a shared group becomes ready only after every replica's reduce, so in the last
//   replicas, created last, a reduce-scatter's copy sorts after it.)
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/plan/replica_symmetry.hpp"
#include "sim/step_program.hpp"

namespace dmuon::sim {

class ReplicaFold {
 public:
  explicit ReplicaFold(const Plan& plan);

  // The template replicas in order: RankBuilder builds their ranks.
  const std::vector<int>& templates() const { return templates_; }
  int shard() const { return move_.shard(); }
  // One pass of the program's build over the replicas in order: `build_template(t)` builds
  // template t's ranks (creating collectives in `prog`), and every other replica gets the copies
  // of what its template created in this pass, of groups inside the template; or, given
  // `build_moved` and positions (second pass), a replica whose launches would not keep its
  // template's order is promoted and `build_moved(rep)` builds it. False when a collective's
  // group cannot be told by its name (two groups of one name, or none of its members): the
  // caller builds every rank.
  bool each_replica(StepProgram& prog, const std::function<void(int)>& build_template,
                    const std::function<void(int)>& build_moved = {});
  // The copies of the templates' launch-order constraints.
  void add_edges(std::set<std::pair<int, int>>& edges) const;
  // Second pass: the global positions, and per template the pairs (a, b) of neighbours in its
  // units' sorted launches (a first), which RankBuilder appends to while building it.
  void set_positions(const std::vector<int>* positions) { positions_ = positions; }
  std::vector<std::pair<int, int>>& neighbours(int t) { return neighbours_[t]; }
  // Whether replica rep's copies of each pair (a, b) of neighbours keep their order.
  bool order_kept(const std::vector<std::pair<int, int>>& neighbours, const std::vector<int>& positions, int rep) const;
  // Replicas built in the second pass although not templates of the Plan (see above).
  const std::vector<int>& promoted() const { return promoted_; }
  // A template rank's list as the rank of replica `rep` at its shard position runs it.
  std::vector<SimOp> moved(const std::vector<SimOp>& ops, int rep) const;
  // Makes `prog` folded (StepProgram::replicas): its `ranks` hold the lists of the templates and
  // promoted replicas in replica order; the copies of the `count` collectives of one step, in the
  // replicas neither.
  void fold(StepProgram& prog, std::size_t count);
  // Collective c as replica rep sees it.
  int collective(int c, int rep) const {
    const auto k = static_cast<std::size_t>(c);
    const int pos = move_.position(rep);
    if (pos == 0 || k >= copies_.size() || copies_[k].empty()) return c;
    return copies_[k][static_cast<std::size_t>(pos - 1)];
  }

 private:
  // Adds replica rep's copies of its template's collectives [from, to); false as each_replica.
  bool add_copies(StepProgram& prog, int rep, std::size_t from, std::size_t to);
  // The Plan group a collective of `prog` belongs to by its name and members; -1: none.
  int group_of(const SimCollective& c) const;
  // The copies of the collectives of an edge or neighbour pair, for each replica of their
  // template (none when both are shared).
  template <class F>
  void each_copy(int a, int b, F&& f) const;

  const Plan& plan_;
  ReplicaMove move_;
  std::vector<int> templates_;
  std::map<std::string, int> group_by_name_;
  bool names_unique_ = true;
  // Per collective of a group inside a template: its copies in the template's other replicas
  // (by ReplicaMove::position - 1); empty otherwise.
  std::vector<std::vector<int>> copies_;
  const std::vector<int>* positions_ = nullptr;
  std::map<int, std::vector<std::pair<int, int>>> neighbours_;  // per template
  std::vector<int> promoted_;
};

}  // namespace dmuon::sim
