#include "sim/replica_fold.hpp"

#include <map>
#include <string>

namespace dmuon::sim {
bool ReplicaFold::add_copies(StepProgram& prog, std::size_t from) {
  const std::size_t to = prog.collectives.size();
  std::map<std::string, int> group_by_name;
  for (std::size_t g = 0; g < plan_.groups.size(); ++g) {
    if (!group_by_name.emplace(plan_.groups[g].name, static_cast<int>(g)).second) return false;
  }
  // The Plan group of each collective to copy (-1: shared by every replica), all found before
  // anything is added.
  std::vector<int> group(to - from, -1);
  for (std::size_t c = from; c < to; ++c) {
    const SimCollective& original = prog.collectives[c];
    const auto g = group_by_name.find(original.group);
    if (g == group_by_name.end() || plan_.groups[static_cast<std::size_t>(g->second)].ranks != original.call.members) {
      return false;
    }
    if (move_.local(g->second)) group[c - from] = g->second;
  }
  copies_.resize(to);
  for (int rep = 1; rep < move_.replicas(); ++rep) {
    for (std::size_t c = from; c < to; ++c) {
      if (group[c - from] < 0) continue;
      SimCollective copy = prog.collectives[c];
      for (int& r : copy.call.members) r = move_.rank(r, rep);
      for (auto& [root, bytes] : copy.call.rooted) root = move_.rank(root, rep);
      for (auto& [src, dst, bytes] : copy.call.transfers) src = move_.rank(src, rep), dst = move_.rank(dst, rep);
      copy.group = plan_.groups[static_cast<std::size_t>(move_.group(group[c - from], rep))].name;
      copies_[c].push_back(static_cast<int>(prog.collectives.size()));
      prog.collectives.push_back(std::move(copy));
    }
  }
  return true;
}

void ReplicaFold::add_edges(std::set<std::pair<int, int>>& edges) const {
  std::vector<std::pair<int, int>> copies;
  for (const auto& [a, b] : edges) {
    for (int rep = 1; rep < move_.replicas(); ++rep) copies.emplace_back(collective(a, rep), collective(b, rep));
  }
  edges.insert(copies.begin(), copies.end());
}

bool ReplicaFold::order_kept(const std::vector<std::pair<int, int>>& neighbours, const std::vector<int>& positions) const {
  for (const auto& [a, b] : neighbours) {
    for (int rep = 1; rep < move_.replicas(); ++rep) {
      if (positions[static_cast<std::size_t>(collective(a, rep))] > positions[static_cast<std::size_t>(collective(b, rep))]) {
        return false;
      }
    }
  }
  return true;
}

std::vector<SimOp> ReplicaFold::moved(const std::vector<SimOp>& ops, int rep) const {
  std::vector<SimOp> out = ops;
  for (SimOp& op : out) {
    if (op.collective >= 0) op.collective = collective(op.collective, rep);
  }
  return out;
}

}  // namespace dmuon::sim
