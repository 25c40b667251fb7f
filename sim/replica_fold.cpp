#include "sim/replica_fold.hpp"

namespace dmuon::sim {

ReplicaFold::ReplicaFold(const Plan& plan) : plan_(plan), move_(plan) {
  for (int rep = 0; rep < move_.replicas(); ++rep) {
    if (move_.template_of(rep) == rep) templates_.push_back(rep);
  }
  for (std::size_t g = 0; g < plan_.groups.size(); ++g) {
    if (!group_by_name_.emplace(plan_.groups[g].name, static_cast<int>(g)).second) names_unique_ = false;
  }
}

int ReplicaFold::group_of(const SimCollective& c) const {
  const auto g = group_by_name_.find(c.group);
  if (g == group_by_name_.end() || plan_.groups[static_cast<std::size_t>(g->second)].ranks != c.call.members) return -1;
  return g->second;
}

bool ReplicaFold::each_replica(StepProgram& prog, const std::function<void(int)>& build_template,
                               const std::function<void(int)>& build_moved) {
  if (!names_unique_) return false;
  std::vector<std::pair<std::size_t, std::size_t>> created(static_cast<std::size_t>(move_.replicas()));  // per template
  for (int rep = 0; rep < move_.replicas(); ++rep) {
    const int t = move_.template_of(rep);
    if (t == rep) {
      const std::size_t from = prog.collectives.size();
      build_template(rep);
      created[static_cast<std::size_t>(rep)] = {from, prog.collectives.size()};
      continue;
    }
    if (build_moved && positions_ && !order_kept(neighbours_[t], *positions_, rep)) {
      promoted_.push_back(rep);
      build_moved(rep);
      // It creates its own collectives of this pass (ZeRO-3 re-gathers); -1 where its copies of
      // its template's would be keeps every later replica at its place in copies_.
      const auto [from, to] = created[static_cast<std::size_t>(t)];
      if (copies_.size() < to) copies_.resize(to);
      for (std::size_t c = from; c < to; ++c) {
        const int g = group_of(prog.collectives[c]);
        if (g >= 0 && move_.local(g)) copies_[c].push_back(-1);
      }
      continue;
    }
    const auto [from, to] = created[static_cast<std::size_t>(t)];
    if (!add_copies(prog, rep, from, to)) return false;
  }
  return true;
}

bool ReplicaFold::add_copies(StepProgram& prog, int rep, std::size_t from, std::size_t to) {
  if (copies_.size() < prog.collectives.size()) copies_.resize(prog.collectives.size());
  for (std::size_t c = from; c < to; ++c) {
    const int g = group_of(prog.collectives[c]);
    if (g < 0) return false;
    if (!move_.local(g)) continue;  // shared by every replica: created once
    SimCollective copy = prog.collectives[c];
    for (int& r : copy.call.members) r = move_.rank(r, rep);
    for (auto& [root, bytes] : copy.call.rooted) root = move_.rank(root, rep);
    for (auto& [src, dst, bytes] : copy.call.transfers) src = move_.rank(src, rep), dst = move_.rank(dst, rep);
    copy.group = plan_.groups[static_cast<std::size_t>(move_.group(g, rep))].name;
    copies_[c].push_back(static_cast<int>(prog.collectives.size()));
    prog.collectives.push_back(std::move(copy));
  }
  return true;
}

template <class F>
void ReplicaFold::each_copy(int a, int b, F&& f) const {
  const auto copies = [&](int c) -> const std::vector<int>* {
    const auto k = static_cast<std::size_t>(c);
    return k < copies_.size() && !copies_[k].empty() ? &copies_[k] : nullptr;
  };
  const std::vector<int>* ca = copies(a);
  const std::vector<int>* cb = copies(b);
  const std::size_t n = ca ? ca->size() : cb ? cb->size() : 0;  // both local: the same template
  for (std::size_t p = 0; p < n; ++p) f(ca ? (*ca)[p] : a, cb ? (*cb)[p] : b);
}

void ReplicaFold::add_edges(std::set<std::pair<int, int>>& edges) const {
  std::vector<std::pair<int, int>> copies;
  for (const auto& [a, b] : edges) each_copy(a, b, [&](int x, int y) { copies.emplace_back(x, y); });
  edges.insert(copies.begin(), copies.end());
}

bool ReplicaFold::order_kept(const std::vector<std::pair<int, int>>& neighbours, const std::vector<int>& positions, int rep) const {
  for (const auto& [a, b] : neighbours) {
    if (positions[static_cast<std::size_t>(collective(a, rep))] > positions[static_cast<std::size_t>(collective(b, rep))]) return false;
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

void ReplicaFold::fold(StepProgram& prog, std::size_t count) {
  const int R = move_.replicas();
  std::vector<char> own(static_cast<std::size_t>(R), 0);  // runs its own list: a template or promoted
  for (int t : templates_) own[static_cast<std::size_t>(t)] = 1;
  for (int rep : promoted_) own[static_cast<std::size_t>(rep)] = 1;
  prog.replicas = R;
  prog.shard = static_cast<std::size_t>(move_.shard());
  prog.replica_list.assign(static_cast<std::size_t>(R), 0);
  prog.copy_position.assign(static_cast<std::size_t>(R), -1);
  // Lists in replica order; copies renumbered among the replicas that are copies still.
  std::vector<int> slot(static_cast<std::size_t>(R), -1), copies_before(static_cast<std::size_t>(R), 0);
  int lists = 0;
  for (int rep = 0; rep < R; ++rep) {
    if (own[static_cast<std::size_t>(rep)]) slot[static_cast<std::size_t>(rep)] = lists++;
  }
  for (int rep = 0; rep < R; ++rep) {
    const int t = move_.template_of(rep);
    if (own[static_cast<std::size_t>(rep)]) {
      prog.replica_list[static_cast<std::size_t>(rep)] = slot[static_cast<std::size_t>(rep)] * move_.shard();
      continue;
    }
    prog.replica_list[static_cast<std::size_t>(rep)] = slot[static_cast<std::size_t>(t)] * move_.shard();
    prog.copy_position[static_cast<std::size_t>(rep)] = copies_before[static_cast<std::size_t>(t)]++;
  }
  copies_.resize(count);
  if (!promoted_.empty()) {
    // A promoted replica's copies are its own collectives now: dropped from every copy list
    // (a copy lies inside its replica: its first member tells which).
    for (auto& copies : copies_) {
      std::erase_if(copies, [&](int c) {
        return c < 0 || own[static_cast<std::size_t>(prog.collectives[static_cast<std::size_t>(c)].call.members.front() /
                                                     move_.shard())] != 0;
      });
    }
  }
  prog.promoted_replicas = promoted_.size();
  prog.replica_copies = std::move(copies_);
  copies_.clear();
}

}  // namespace dmuon::sim
