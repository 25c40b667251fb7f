// proxy_pairs (sim/proxy_task.hpp) against the dense task it replaces, worked out here as
// SimGrid's ptask_L07 builds it: the matrix summed in pair order, its entries scanned row-major,
// each route's links weighted by the entry and summed per link, the longest route latency L and
// G = max latency x bytes. The proxy pairs must hold every link of the dense task once, with its
// weight to the bit, report L as their longest latency and G as their largest latency x bytes.
#include <algorithm>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "catch_compat.hpp"
#include "sim/proxy_task.hpp"
#include "sim/topology.hpp"
#include "sim_test_support.hpp"

using namespace dmuon;

namespace {

using Pairs = std::vector<std::tuple<int, int, double>>;

struct Dense {
  std::map<int, double> weight;  // link -> weight
  double latency = 0, g = 0;
};

Dense dense_task(const Pairs& pairs, const std::vector<int>& hosts, const sim::Topology& topo) {
  const std::size_t n = hosts.size();
  std::vector<double> matrix(n * n, 0.0);
  auto row = [&](int rank) { return static_cast<std::size_t>(std::find(hosts.begin(), hosts.end(), rank) - hosts.begin()); };
  for (const auto& [src, dst, b] : pairs) matrix[row(src) * n + row(dst)] += b;
  Dense d;
  for (std::size_t k = 0; k < n * n; ++k) {
    if (matrix[k] <= 0) continue;
    double lat = 0.0;
    for (int l : topo.route(hosts[k / n], hosts[k % n])) {
      lat += topo.links()[static_cast<std::size_t>(l)].latency_s;
      auto [it, fresh] = d.weight.try_emplace(l, matrix[k]);
      if (!fresh) it->second += matrix[k];
    }
    d.latency = std::max(d.latency, lat);
    d.g = std::max(d.g, lat * matrix[k]);
  }
  return d;
}

void same_task(const Pairs& pairs, const std::vector<int>& hosts, const sim::Topology& topo) {
  const Dense d = dense_task(pairs, hosts, topo);
  const std::vector<sim::ProxyPair> proxy = sim::proxy_pairs(pairs, hosts, topo);
  std::map<int, double> weight;
  double latency = 0, g = 0;
  for (const auto& p : proxy) {
    CHECK(p.bytes > 0);
    for (int l : p.links) {
      CHECK(weight.emplace(l, p.bytes).second);  // each link in one pair only
    }
    latency = std::max(latency, p.latency_s);
    g = std::max(g, p.latency_s * p.bytes);
  }
  CHECK(weight == d.weight);  // to the bit
  CHECK(latency == d.latency);
  CHECK(g == Approx(d.g).epsilon(1e-15));
  // A pair per distinct weight, and the latency carrier when there is a latency to carry.
  std::vector<double> distinct;
  for (const auto& [l, w] : d.weight) distinct.push_back(w);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  CHECK(proxy.size() == distinct.size() + (d.latency > 0 ? 1 : 0));
}

}  // namespace

TEST_CASE("A ring across nodes on one rail is one proxy pair and the latency carrier", "[sim]") {
  const sim::Topology topo(simtest::cluster(4, 2));
  const Pairs ring = {{0, 2, 5e6}, {2, 4, 5e6}, {4, 6, 5e6}, {6, 0, 5e6}};
  const std::vector<int> hosts = {0, 2, 4, 6};
  same_task(ring, hosts, topo);
  const auto proxy = sim::proxy_pairs(ring, hosts, topo);
  REQUIRE(proxy.size() == 2);
  CHECK(proxy[0].links.size() == 8);  // each node's NIC up and down port
  CHECK(proxy[0].bytes == 5e6);
  CHECK(proxy[0].latency_s == 0);
  CHECK(proxy[1].links.empty());
  CHECK(proxy[1].latency_s == topo.route_latency_s(0, 2));  // the sending NIC port's 10 us
  CHECK(proxy[1].latency_s * proxy[1].bytes == Approx(topo.route_latency_s(0, 2) * 5e6).epsilon(1e-15));
}

TEST_CASE("proxy_pairs keeps the dense task's weights, latency and G on random tasks", "[sim]") {
  ClusterSpec c = simtest::cluster(6, 4);
  c.network->nics_per_node = 2;  // two GPUs a NIC: shared ports, cross-rail routes over the spine
  c.network->spine_latency_us = 3;
  const sim::Topology topo(c);
  std::mt19937 rng(7);
  for (int t = 0; t < 300; ++t) {
    INFO("task " << t);
    std::vector<int> ranks(static_cast<std::size_t>(topo.world()));
    for (int r = 0; r < topo.world(); ++r) ranks[static_cast<std::size_t>(r)] = r;
    std::shuffle(ranks.begin(), ranks.end(), rng);
    const std::size_t n = 2 + rng() % (ranks.size() - 1);
    const std::vector<int> members(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(n));
    Pairs pairs;
    // Bytes from a few values (shared weights) or arbitrary ones; some pairs listed twice.
    const double values[] = {1e6, 2.5e6, 1e6 / 3, 7.0};
    for (int k = 0; k < static_cast<int>(2 * n); ++k) {
      const int a = members[rng() % n], b = members[rng() % n];
      if (a == b) continue;
      pairs.emplace_back(a, b, rng() % 2 ? values[rng() % 4] : 1.0 + (rng() % 1000000) * 1.37);
    }
    if (pairs.empty()) continue;
    std::vector<int> hosts;  // in first appearance, as run_fast lists them
    for (const auto& [a, b, bytes] : pairs) {
      for (int r : {a, b}) {
        if (std::find(hosts.begin(), hosts.end(), r) == hosts.end()) hosts.push_back(r);
      }
    }
    same_task(pairs, hosts, topo);
  }
}

TEST_CASE("proxies_for is the least q with q (q - 1) ordered pairs", "[sim]") {
  CHECK(sim::proxies_for(1) == 2);
  CHECK(sim::proxies_for(2) == 2);
  CHECK(sim::proxies_for(3) == 3);
  CHECK(sim::proxies_for(6) == 3);
  CHECK(sim::proxies_for(7) == 4);
  CHECK(sim::proxies_for(12) == 4);
  CHECK(sim::proxies_for(13) == 5);
}
