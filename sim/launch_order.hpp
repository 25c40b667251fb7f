// Which Plan collectives travel as one NCCL launch (a layer's collectives of one kind and
// group), and the one order in which every rank issues the launches: the merging half of the
// step program (step_program.hpp). SimGrid-free.
#pragma once
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/cost/forward_backward_cost.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"

namespace dmuon::sim {

// The unit (layer) of a forward/backward collective, -1 when it spans several; the lowest unit
// it touches in *latest_backward.
int unit_of(const Op& op, const Routing& routing, const ForwardBackwardCost& units, int* latest_backward);

using Entries = std::vector<std::pair<int, std::vector<int>>>;  // (collective, plan ops it stands for)

// Merging one layer's launches can tie two launches in a cycle when the Plan orders different
// owners' collectives on one parameter (its dependencies are per parameter: an MoE expert stack
// holds many owners' matrices). The program is then built again without merging.
struct MergeCycle : Error {
  using Error::Error;
};

// A dependency of op `a` on `b` that the step must respect: always, unless both are collectives
// that touch no common element.
bool real_dependency(const Op& a, const Op& b);

// real_dependency of every op of one rank's list on each of its Plan dependencies, asked once
// and read by both passes of the program's build (each asked it of the same pairs: ~10% of a
// 1,024-GPU owner-striped run).
class RealDeps {
 public:
  RealDeps() = default;
  explicit RealDeps(const std::vector<Op>& ops);
  // Whether ops[i] must wait for ops[i].deps[k].
  bool real(int i, std::size_t k) const { return real_[begin_[static_cast<std::size_t>(i)] + k] != 0; }

 private:
  std::vector<std::uint8_t> real_;  // every op's deps in turn
  std::vector<std::uint32_t> begin_;  // op i's first entry
};

// Adds the ordering constraints between one unit's merged collectives on one rank to `edges`.
void collect_edges(const Entries& list, const std::vector<Op>& plan_ops, const RealDeps& real,
                   std::set<std::pair<int, int>>& edges);

// The position of every merged collective in the one order all ranks follow; throws MergeCycle.
std::vector<int> global_positions(int count, const std::set<std::pair<int, int>>& edges);

}  // namespace dmuon::sim
