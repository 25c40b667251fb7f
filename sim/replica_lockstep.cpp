#include "sim/replica_lockstep.hpp"

#include <vector>

namespace dmuon::sim {
namespace {

bool one_node(const std::vector<int>& members, const Topology& topo) {
  for (int m : members) {
    if (topo.node_of(m) != topo.node_of(members.front())) return false;
  }
  return true;
}

std::string describe(const SimCollective& c) { return "collective '" + c.label + "' of group '" + c.group + "'"; }

}  // namespace

std::string replica_lockstep_obstacle(const StepProgram& prog, const Topology& topo) {
  if (prog.replicas <= 1) return "the program is not folded";
  const std::size_t S = prog.ranks.size(), R = static_cast<std::size_t>(prog.replicas);
  const std::size_t first = prog.collectives_per_step;
  // The first step's collectives hold replica 0's, their copies and the shared ones.
  const std::vector<int> original = prog.originals();
  // Ranks of replica 0 whose NVLink ports a copied collective uses.
  std::vector<char> copied_port(S, 0);
  for (std::size_t c = 0; c < first; ++c) {
    const SimCollective& sc = prog.collectives[c];
    if (prog.replica_copies[c].empty() || sc.call.members.size() < 2) continue;
    if (!one_node(sc.call.members, topo)) return describe(sc) + " is copied to every replica but spans nodes";
    for (int m : sc.call.members) copied_port[static_cast<std::size_t>(m)] = 1;
  }
  for (std::size_t c = 0; c < first; ++c) {
    const SimCollective& sc = prog.collectives[c];
    if (!prog.replica_copies[c].empty() || original[c] != static_cast<int>(c)) continue;
    std::size_t in_first = 0;
    for (int m : sc.call.members) in_first += static_cast<std::size_t>(m) < S;
    if (in_first == 0 || in_first * R != sc.call.members.size()) {
      return describe(sc) + " is shared but does not have as many members in every replica";
    }
    // Its NVLink ports: those of members with another member on their node.
    std::vector<int> per_node(static_cast<std::size_t>(topo.nodes()), 0);
    for (int m : sc.call.members) ++per_node[static_cast<std::size_t>(topo.node_of(m))];
    for (int m : sc.call.members) {
      if (per_node[static_cast<std::size_t>(topo.node_of(m))] > 1 && copied_port[static_cast<std::size_t>(m) % S]) {
        return describe(sc) + " is shared and routes over NVLink ports a copied collective uses";
      }
    }
  }
  return "";
}

}  // namespace dmuon::sim
