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
  const std::size_t S = prog.shard, R = static_cast<std::size_t>(prog.replicas);
  const std::size_t first = prog.collectives_per_step;
  // The first step's collectives hold the templates', their copies and the shared ones.
  const std::vector<int> original = prog.originals();
  // Per list (a template rank): whether a copied collective uses its NVLink ports.
  std::vector<char> copied_port(prog.ranks.size(), 0);
  for (std::size_t c = 0; c < first; ++c) {
    const SimCollective& sc = prog.collectives[c];
    if (prog.replica_copies[c].empty() || sc.call.members.size() < 2) continue;
    if (!one_node(sc.call.members, topo)) return describe(sc) + " is copied to other replicas but spans nodes";
    for (int m : sc.call.members) copied_port[prog.list(static_cast<std::size_t>(m))] = 1;
  }
  std::vector<std::size_t> template_of(R, 0), templates;  // per replica; the templates in order
  for (std::size_t rep = 0; rep < R; ++rep) {
    if (prog.copy_position[rep] < 0) templates.push_back(rep);
  }
  for (std::size_t rep = 0; rep < R; ++rep) template_of[rep] = templates.at(static_cast<std::size_t>(prog.replica_list[rep]) / S);
  std::vector<std::size_t> in_replica(R, 0);
  for (std::size_t c = 0; c < first; ++c) {
    const SimCollective& sc = prog.collectives[c];
    if (!prog.replica_copies[c].empty() || original[c] != static_cast<int>(c)) continue;
    // A template's own collective (its replica's alone, no copies) is simulated as it is; a
    // shared one has a member in every replica and as many in each as in its template, so that
    // the templates' members' arrivals stand for all.
    in_replica.assign(R, 0);
    for (int m : sc.call.members) ++in_replica[static_cast<std::size_t>(m) / S];
    const std::size_t home = static_cast<std::size_t>(sc.call.members.front()) / S;
    if (in_replica[home] == sc.call.members.size()) {
      if (prog.copy_position[home] >= 0) return describe(sc) + " lies inside a replica that is no template";
      continue;
    }
    for (std::size_t rep = 0; rep < R; ++rep) {
      if (in_replica[rep] == 0 || in_replica[rep] != in_replica[template_of[rep]]) {
        return describe(sc) + " is shared but does not have as many members in every replica";
      }
    }
    // Its NVLink ports: those of members with another member on their node.
    std::vector<int> per_node(static_cast<std::size_t>(topo.nodes()), 0);
    for (int m : sc.call.members) ++per_node[static_cast<std::size_t>(topo.node_of(m))];
    for (int m : sc.call.members) {
      if (per_node[static_cast<std::size_t>(topo.node_of(m))] > 1 && copied_port[prog.list(static_cast<std::size_t>(m))]) {
        return describe(sc) + " is shared and routes over NVLink ports a copied collective uses";
      }
    }
  }
  return "";
}

}  // namespace dmuon::sim
