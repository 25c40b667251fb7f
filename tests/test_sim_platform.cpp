// The platform's netzone computes each route from the Topology (sim/platform.cpp): SimGrid's
// route between any two GPUs is Topology::route's links, in order, with their summed latency,
// and a lone transfer over it takes that latency plus bytes over the slowest link's bandwidth.
// SimGrid allows one Engine per process, hence one test case.
#include <simgrid/s4u.hpp>

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "sim/network_model.hpp"
#include "sim/platform.hpp"
#include "sim/topology.hpp"
#include "sim_test_support.hpp"

namespace sg4 = simgrid::s4u;
using namespace dmuon;

TEST_CASE("SimGrid routes every GPU pair over Topology::route's links", "[sim][platform]") {
  // 2 nodes x 4 GPUs, 2 NICs a node: GPUs 0-1 on rail 0, 2-3 on rail 1. An oversubscribed spine
  // (2 x 25 GB/s / 4) and a spine latency make a cross-rail route differ from a same-rail one
  // in both bandwidth and latency.
  ClusterSpec c = simtest::cluster(2, 4);
  c.network->nics_per_node = 2;
  c.network->spine_latency_us = 3;
  c.network->spine_oversubscription = 4;
  const sim::Topology topo(c);

  int argc = 1;
  char name[] = "test_sim_platform";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  sim::configure_network_model();
  const sim::Platform platform = sim::build_platform(topo, 3);
  const std::vector<sg4::Host*>& hosts = platform.gpus;
  REQUIRE(static_cast<int>(hosts.size()) == topo.world());
  REQUIRE(platform.proxies.size() == 3);
  // Its zone must be the root: a second platform in the same engine is refused.
  REQUIRE_THROWS_AS(sim::build_platform(topo), Error);

  int four_link_routes = 0;
  for (int a = 0; a < topo.world(); ++a) {
    for (int b = 0; b < topo.world(); ++b) {
      if (a == b) continue;
      INFO("gpu" << a << " -> gpu" << b);
      std::vector<sg4::Link*> links;
      double latency_s = 0;
      hosts[static_cast<std::size_t>(a)]->route_to(hosts[static_cast<std::size_t>(b)], links, &latency_s);
      std::vector<std::string> got, want;
      for (const auto* l : links) got.push_back(l->get_name());
      for (int l : topo.route(a, b)) want.push_back(topo.links()[static_cast<std::size_t>(l)].name);
      CHECK(got == want);
      CHECK(latency_s == topo.route_latency_s(a, b));
      four_link_routes += want.size() == 4;
    }
  }
  // The cross-rail pairs: each GPU reaches the 2 GPUs of the other node's other rail.
  CHECK(four_link_routes == topo.world() * 2);

  // A proxy route is the one set for that ordered pair, with the latency set, until cleared.
  platform.proxy_routes->set(2, 0, {5, 0, topo.route(0, 6).back()}, 7e-6);
  platform.proxy_routes->set(0, 2, {}, 3e-6);
  for (const auto& [src, dst, want_links, want_latency] :
       {std::tuple{2, 0, std::vector<int>{5, 0, topo.route(0, 6).back()}, 7e-6}, std::tuple{0, 2, std::vector<int>{}, 3e-6}}) {
    std::vector<sg4::Link*> links;
    double latency_s = 0;
    platform.proxies[static_cast<std::size_t>(src)]->route_to(platform.proxies[static_cast<std::size_t>(dst)], links, &latency_s);
    std::vector<std::string> got, want;
    for (const auto* l : links) got.push_back(l->get_name());
    for (int l : want_links) want.push_back(topo.links()[static_cast<std::size_t>(l)].name);
    CHECK(got == want);
    CHECK(latency_s == want_latency);
  }
  platform.proxy_routes->clear(2, 0);
  platform.proxy_routes->clear(0, 2);

  // Lone transfers: intra-node, same-rail inter-node, and cross-rail (the spine's bottleneck).
  const std::vector<std::pair<int, int>> pairs = {{0, 1}, {0, 4}, {0, 6}};
  const double bytes = 1e9;
  std::vector<double> seconds;
  sg4::Actor::create("sender", hosts[0], [&] {
    for (const auto& [src, dst] : pairs) {
      const double t0 = sg4::Engine::get_clock();
      sg4::Comm::sendto_async(hosts[static_cast<std::size_t>(src)], hosts[static_cast<std::size_t>(dst)],
                              static_cast<std::uint64_t>(bytes))
          ->wait();
      seconds.push_back(sg4::Engine::get_clock() - t0);
    }
  });
  engine.run();
  REQUIRE(seconds.size() == pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto [src, dst] = pairs[i];
    INFO("gpu" << src << " -> gpu" << dst);
    CHECK(seconds[i] == Approx(topo.route_latency_s(src, dst) + bytes / topo.route_bw_Bps(src, dst)).epsilon(1e-9));
  }
  // The three differ, so a route over the wrong links would show.
  CHECK(topo.route_bw_Bps(0, 6) < topo.route_bw_Bps(0, 4));
  CHECK(topo.route_latency_s(0, 6) > topo.route_latency_s(0, 4));
}
