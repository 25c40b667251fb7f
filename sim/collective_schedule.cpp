#include "sim/collective_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "core/error.hpp"

namespace dmuon::sim {
namespace {

// Members grouped by node, nodes in order of first appearance, ranks in group order.
std::vector<std::vector<int>> by_node(const std::vector<int>& members, const Topology& topo) {
  std::vector<std::vector<int>> out;
  std::map<int, std::size_t> index;
  for (int r : members) {
    auto [it, fresh] = index.emplace(topo.node_of(r), out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(r);
  }
  return out;
}

// Channel c's ring order: node n starts at offset s_n = c - n (mod its member count), so the
// GPU that leaves node n has the local index the next node enters at (same rail).
std::vector<int> ring_order(const std::vector<std::vector<int>>& nodes, int channel) {
  std::vector<int> order;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const int m = static_cast<int>(nodes[n].size());
    const int start = ((channel - static_cast<int>(n)) % m + m) % m;
    for (int j = 0; j < m; ++j) order.push_back(nodes[n][static_cast<std::size_t>((start + j) % m)]);
  }
  return order;
}

// Adds an edge, merging it into an equal (src, dst, first_step, steps) edge of another channel.
class EdgeSet {
 public:
  void add(int src, int dst, int first, int steps, double bytes) {
    if (src == dst || bytes <= 0) return;
    auto [it, fresh] = index_.emplace(std::make_tuple(src, dst, first, steps), edges_.size());
    if (fresh) {
      edges_.push_back({src, dst, first, steps, bytes});
    } else {
      edges_[it->second].bytes_per_step += bytes;
    }
  }
  CollectiveSchedule finish(std::string algorithm) {
    CollectiveSchedule s;
    s.algorithm = std::move(algorithm);
    for (const auto& e : edges_) s.total_steps = std::max(s.total_steps, e.first_step + e.steps);
    s.edges = std::move(edges_);
    return s;
  }

 private:
  std::vector<ScheduleEdge> edges_;
  std::map<std::tuple<int, int, int, int>, std::size_t> index_;
};

// NCCL picks one channel count per communicator, from its shape (core/io/scenario.hpp
// channels_for_group: the GPUs it has on its fullest node, one node or several). The count
// matters for chains and trees: every channel pipelines its own chunks, so more channels sharing
// one NIC make each chunk slower and the pipeline fill longer.
int channels_of(const std::vector<std::vector<int>>& nodes, const NcclSpec& nccl) {
  std::size_t per_node = 0;
  for (const auto& n : nodes) per_node = std::max(per_node, n.size());
  const int nodes_in_group = nodes.size() > 1 ? 2 : 1;  // the count depends only on one node or several
  if (nccl.channels > 0 || !nccl.links) return channels_for_group(nccl, static_cast<int>(per_node), nodes_in_group);
  // Asked once per collective: a derived count depends only on the shape and the links, so the
  // search runs once per shape.
  const NcclNodeLinks& l = *nccl.links;
  const auto key = std::make_tuple(l.compute_capability, l.nvlink_GBps, l.pcie_GBps, l.nic_GBps, l.nics_per_node,
                                   nccl.channels_one_gpu_per_node, per_node, nodes_in_group);
  thread_local std::map<decltype(key), int> derived;
  auto it = derived.find(key);
  if (it == derived.end()) {
    it = derived.emplace(key, channels_for_group(nccl, static_cast<int>(per_node), nodes_in_group)).first;
  }
  return it->second;
}

// Chunks a channel's share of `bytes` is pipelined in.
int chunks(double bytes_per_channel, const NcclSpec& nccl) {
  return std::max(1, static_cast<int>(std::ceil(bytes_per_channel / double(nccl.chunk_bytes))));
}

CollectiveSchedule ring(const CollectiveCall& call, const Topology& topo, const NcclSpec& nccl, int steps) {
  const auto nodes = by_node(call.members, topo);
  const int p = static_cast<int>(call.members.size());
  const int C = channels_of(nodes, nccl);
  EdgeSet set;
  for (int c = 0; c < C; ++c) {
    const auto order = ring_order(nodes, c);
    for (int i = 0; i < p; ++i) set.add(order[i], order[(i + 1) % p], 0, steps, call.bytes / (double(C) * p));
  }
  return set.finish("ring");
}

// Broadcast (from the root down a chain) or reduce (up a chain to the root), per channel.
CollectiveSchedule chains(const CollectiveCall& call, const Topology& topo, const NcclSpec& nccl) {
  const auto nodes = by_node(call.members, topo);
  const int p = static_cast<int>(call.members.size());
  const int C = channels_of(nodes, nccl);
  const bool down = call.kind == OpKind::broadcast;
  EdgeSet set;
  for (const auto& [root, bytes] : call.rooted) {
    const int k = chunks(bytes / C, nccl);
    for (int c = 0; c < C; ++c) {
      auto order = ring_order(nodes, c);
      std::rotate(order.begin(), std::find(order.begin(), order.end(), root), order.end());
      for (int i = 0; i + 1 < p; ++i) {
        if (down) {
          set.add(order[i], order[i + 1], i, k, bytes / (double(C) * k));
        } else {
          set.add(order[i + 1], order[i], p - 2 - i, k, bytes / (double(C) * k));
        }
      }
    }
  }
  return set.finish("chain");
}

// One tree of NCCL's double binary tree: parents of every member. `mirror` numbers the nodes
// backwards, so the leaves of one tree are inner vertices of the other.
std::vector<int> tree_parents(const std::vector<std::vector<int>>& nodes, bool mirror, std::map<int, int>& index) {
  const int N = static_cast<int>(nodes.size());
  std::vector<int> parent;
  for (int n = 0; n < N; ++n) {
    const auto& local = nodes[static_cast<std::size_t>(n)];
    const int pos = mirror ? N - 1 - n : n;  // heap position of this node
    const int parent_pos = (pos - 1) / 2;
    const int parent_node = mirror ? N - 1 - parent_pos : parent_pos;
    for (std::size_t j = 0; j < local.size(); ++j) {
      index[local[j]] = static_cast<int>(parent.size());
      if (j > 0) {
        parent.push_back(local[j - 1]);  // intra-node chain toward the leader
      } else {
        parent.push_back(pos == 0 ? -1 : nodes[static_cast<std::size_t>(parent_node)].front());
      }
    }
  }
  return parent;
}

CollectiveSchedule tree(const CollectiveCall& call, const Topology& topo, const NcclSpec& nccl) {
  const auto nodes = by_node(call.members, topo);
  const int C = channels_of(nodes, nccl);
  EdgeSet set;
  for (bool mirror : {false, true}) {
    std::map<int, int> index;
    const std::vector<int> parent = tree_parents(nodes, mirror, index);
    std::vector<int> ranks(parent.size());
    for (const auto& [r, i] : index) ranks[static_cast<std::size_t>(i)] = r;
    // Heights (longest path to a leaf) and depths (distance to the root), by relaxation.
    std::vector<int> height(parent.size(), 0), depth(parent.size(), 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t i = 0; i < parent.size(); ++i) {
        if (parent[i] < 0) continue;
        const auto pi = static_cast<std::size_t>(index.at(parent[i]));
        if (height[pi] < height[i] + 1) height[pi] = height[i] + 1, changed = true;
        if (depth[i] != depth[pi] + 1) depth[i] = depth[pi] + 1, changed = true;
      }
    }
    const int H = *std::max_element(height.begin(), height.end());
    const double half = call.bytes / 2;
    const int k = chunks(half / std::max(1, C / 2), nccl);
    for (std::size_t i = 0; i < parent.size(); ++i) {
      if (parent[i] < 0) continue;
      const auto pi = static_cast<std::size_t>(index.at(parent[i]));
      set.add(ranks[i], parent[i], height[i], k, half / k);         // reduce up
      set.add(parent[i], ranks[i], H + depth[pi], k, half / k);     // broadcast down
    }
  }
  return set.finish("tree");
}

CollectiveSchedule direct(const CollectiveCall& call) {
  EdgeSet set;
  for (const auto& [src, dst, bytes] : call.transfers) set.add(src, dst, 0, 1, bytes);
  return set.finish("direct");
}

}  // namespace

double bus_factor(OpKind kind, int p) {
  if (p <= 1) return 1;
  switch (kind) {
    case OpKind::all_reduce: return 2.0 * (p - 1) / p;
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_to_all: return double(p - 1) / p;
    default: return 1;
  }
}

namespace {

CollectiveSchedule algorithm_schedule(const CollectiveCall& call, const Topology& topo, const NcclSpec& nccl) {
  const int p = static_cast<int>(call.members.size());
  switch (call.kind) {
    case OpKind::all_gather:
    case OpKind::reduce_scatter: return ring(call, topo, nccl, p - 1);
    case OpKind::broadcast:
    case OpKind::reduce: return chains(call, topo, nccl);
    case OpKind::all_to_all: return direct(call);
    case OpKind::all_reduce: {
      if (nccl.all_reduce == AllReduceAlgorithm::ring) return ring(call, topo, nccl, 2 * (p - 1));
      if (nccl.all_reduce == AllReduceAlgorithm::tree) return tree(call, topo, nccl);
      auto r = ring(call, topo, nccl, 2 * (p - 1));
      auto t = tree(call, topo, nccl);
      return isolated_seconds(t, topo) < isolated_seconds(r, topo) ? t : r;
    }
    default: throw Error("collective schedule: " + std::string(to_string(call.kind)) + " is not a collective");
  }
}

}  // namespace

CollectiveSchedule make_schedule(const CollectiveCall& call, const Topology& topo, const NcclSpec& nccl) {
  if (call.members.size() <= 1) return {"none", 0, {}};
  CollectiveSchedule s = algorithm_schedule(call, topo, nccl);
  // The size calibration: a collective that reaches a fraction e of the links' rate moves as if
  // it carried 1/e of its bytes (same in both modes, so they still agree).
  const double e = nccl.efficiency_at(call.bytes);
  if (e != 1) {
    for (auto& edge : s.edges) edge.bytes_per_step /= e;
  }
  return s;
}

FastSummary summarize(const CollectiveSchedule& schedule, const Topology& topo) {
  FastSummary s;
  const auto& links = topo.links();
  struct EdgeInfo {
    Route route;
    double latency_s;
  };
  std::vector<EdgeInfo> info;
  std::map<std::pair<int, int>, double> pairs;
  std::vector<double> total_bytes(links.size(), 0);
  std::vector<std::pair<int, int>> events;  // (step, edge index): edges start at first_step
  for (std::size_t i = 0; i < schedule.edges.size(); ++i) {
    const auto& e = schedule.edges[i];
    const auto route = topo.route(e.src, e.dst);
    info.push_back({route, topo.route_latency_s(e.src, e.dst)});
    pairs[{e.src, e.dst}] += e.bytes_per_step * e.steps;
    for (int l : route) total_bytes[static_cast<std::size_t>(l)] += e.bytes_per_step * e.steps;
    s.max_route_latency_s = std::max(s.max_route_latency_s, info.back().latency_s);
    events.emplace_back(e.first_step, static_cast<int>(i));
  }
  for (const auto& [key, bytes] : pairs) s.pair_bytes.emplace_back(key.first, key.second, bytes);
  for (std::size_t l = 0; l < links.size(); ++l) s.busiest_link_s = std::max(s.busiest_link_s, total_bytes[l] / links[l].bw_Bps);
  // Segments of steps with the same active edges: boundaries where an edge starts or ends.
  std::set<int> bounds;
  for (const auto& e : schedule.edges) bounds.insert(e.first_step), bounds.insert(e.first_step + e.steps);
  std::sort(events.begin(), events.end());
  std::vector<int> active;
  constexpr double kNever = 1e30;
  std::vector<double> load(links.size(), 0), first_s(links.size(), kNever);
  std::size_t next = 0;
  for (auto it = bounds.begin(); it != bounds.end() && std::next(it) != bounds.end(); ++it) {
    const int t0 = *it, t1 = *std::next(it);
    std::erase_if(active, [&](int i) { return schedule.edges[static_cast<std::size_t>(i)].first_step + schedule.edges[static_cast<std::size_t>(i)].steps <= t0; });
    for (; next < events.size() && events[next].first <= t0; ++next) active.push_back(events[next].second);
    // A link is busy from the earliest arrival of its flows (their route latency) until all
    // of its bytes have passed.
    for (int i : active) {
      for (int l : info[static_cast<std::size_t>(i)].route) {
        load[static_cast<std::size_t>(l)] += schedule.edges[static_cast<std::size_t>(i)].bytes_per_step;
        first_s[static_cast<std::size_t>(l)] = std::min(first_s[static_cast<std::size_t>(l)], info[static_cast<std::size_t>(i)].latency_s);
      }
    }
    double step_s = 0;
    for (int i : active) {
      step_s = std::max(step_s, info[static_cast<std::size_t>(i)].latency_s);
      for (int l : info[static_cast<std::size_t>(i)].route) {
        const auto k = static_cast<std::size_t>(l);
        step_s = std::max(step_s, first_s[k] + load[k] / links[k].bw_Bps);
      }
    }
    for (int i : active) {
      for (int l : info[static_cast<std::size_t>(i)].route) load[static_cast<std::size_t>(l)] = 0, first_s[static_cast<std::size_t>(l)] = kNever;
    }
    s.isolated_s += (t1 - t0) * step_s;
  }
  return s;
}

double isolated_seconds(const CollectiveSchedule& schedule, const Topology& topo) { return summarize(schedule, topo).isolated_s; }

}  // namespace dmuon::sim
