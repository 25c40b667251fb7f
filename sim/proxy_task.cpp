#include "sim/proxy_task.hpp"

#include <algorithm>
#include <map>

namespace dmuon::sim {

std::vector<ProxyPair> proxy_pairs(const std::vector<std::tuple<int, int, double>>& pairs, const std::vector<int>& hosts,
                                   const Topology& topo) {
  // The dense matrix, sparse: entry (row, column) as the dense task sums it.
  std::vector<int> row_of(static_cast<std::size_t>(topo.world()), -1);
  for (std::size_t i = 0; i < hosts.size(); ++i) row_of[static_cast<std::size_t>(hosts[i])] = static_cast<int>(i);
  std::map<std::size_t, double> entries;  // row * n + column -> bytes, in the order L07 scans them
  const std::size_t n = hosts.size();
  for (const auto& [src, dst, b] : pairs) {
    const auto at = static_cast<std::size_t>(row_of[static_cast<std::size_t>(src)]) * n +
                    static_cast<std::size_t>(row_of[static_cast<std::size_t>(dst)]);
    entries[at] += b;  // from 0.0, as the matrix starts
  }
  // Link weights summed as L07's expands add them (first value, then += in scan order); the
  // latency and G as L07 computes them (a route's latency summed link by link from 0.0).
  std::vector<double> weight(topo.links().size(), 0.0);
  std::vector<int> links_in_order;
  double latency = 0, g = 0;
  for (const auto& [at, b] : entries) {
    if (b <= 0) continue;
    const int src = hosts[at / n], dst = hosts[at % n];
    double lat = 0.0;
    for (int l : topo.route(src, dst)) {
      lat += topo.links()[static_cast<std::size_t>(l)].latency_s;
      double& w = weight[static_cast<std::size_t>(l)];
      if (w == 0.0) {
        w = b;
        links_in_order.push_back(l);
      } else {
        w += b;
      }
    }
    latency = std::max(latency, lat);
    g = std::max(g, lat * b);
  }
  std::map<double, ProxyPair> by_weight;
  for (int l : links_in_order) {
    ProxyPair& p = by_weight[weight[static_cast<std::size_t>(l)]];
    p.bytes = weight[static_cast<std::size_t>(l)];
    p.links.push_back(l);
  }
  std::vector<ProxyPair> out;
  for (auto& [w, p] : by_weight) out.push_back(std::move(p));
  if (latency > 0) out.push_back({{}, g / latency, latency});
  return out;
}

int proxies_for(std::size_t pair_count) {
  int q = 2;
  while (static_cast<std::size_t>(q) * static_cast<std::size_t>(q - 1) < pair_count) ++q;
  return q;
}

}  // namespace dmuon::sim
