#include "sim/platform.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/asserts.h>

#include <cstdint>
#include <unordered_map>
#include <utility>

#include "core/error.hpp"

namespace dmuon::sim {
namespace {

namespace sg4 = simgrid::s4u;
namespace routing = simgrid::kernel::routing;

// A netzone that asks the Topology for each route when SimGrid needs it (a transfer starting
// under CM02, a parallel task under ptask_L07), instead of storing one per ordered GPU pair as
// the FullZone before it did: 119 B a route, 127 MB at 1,024 GPUs and 8 GB at 8,192
// (memory_estimate.cpp). A route is at most 4 links, so computing it is a few index operations.
class TopologyZone final : public routing::NetZoneImpl, public ProxyRoutes {
 public:
  explicit TopologyZone(const Topology& topo) : NetZoneImpl("cluster"), topo_(topo) {}

  void set(int src, int dst, std::vector<int> links, double latency_s) override {
    proxy_routes_[key(src, dst)] = {std::move(links), latency_s};
  }
  void clear(int src, int dst) override { proxy_routes_.erase(key(src, dst)); }

  // Topology link index -> SimGrid link, in Topology::links() order. get_local_route reads the
  // links' implementations, taken once here: Link::get_impl is a dynamic_cast, and routes are
  // asked for every pair of every parallel task (~2.5% of a 1,024-GPU run).
  void add_link(sg4::Link* link) {
    links.push_back(link);
    impls_.push_back(link->get_impl());
  }
  std::vector<sg4::Link*> links;

 private:
  // As FullZone::get_local_route: append the route's links in order and add each link's
  // latency to *latency (add_link_latency), so a transfer is priced exactly as before. The
  // netpoint ids are ranks (build_platform adds the hosts first, in rank order, and checks); the
  // proxies come next, and a route between two of them is the one set for it.
  void get_local_route(const routing::NetPoint* src, const routing::NetPoint* dst, routing::Route* into,
                       double* latency) override {
    // A FullZone would route a GPU to itself over the network model's loopback link, which
    // 3.32's installed headers do not expose; dmuon never sends to itself (collective_schedule
    // drops src == dst edges), so a self-route is a bug to stop at, not to price.
    xbt_assert(src != dst, "dmuon platform: no route from %s to itself", src->get_cname());
    const auto world = static_cast<unsigned long>(topo_.world());
    if (src->id() >= world || dst->id() >= world) {
      const auto it = proxy_routes_.find(key(static_cast<int>(src->id() - world), static_cast<int>(dst->id() - world)));
      xbt_assert(src->id() >= world && dst->id() >= world && it != proxy_routes_.end(),
                 "dmuon platform: no route set from %s to %s", src->get_cname(), dst->get_cname());
      for (int l : it->second.first) into->link_list_.push_back(impls_[static_cast<std::size_t>(l)]);
      if (latency) *latency += it->second.second;
      return;
    }
    const Route route = topo_.route(static_cast<int>(src->id()), static_cast<int>(dst->id()));
    into->link_list_.reserve(into->link_list_.size() + static_cast<std::size_t>(route.size));
    for (int l : route) {
      into->link_list_.push_back(impls_[static_cast<std::size_t>(l)]);
      // The latency the link was created with (build_platform), as link->get_latency() reads it.
      if (latency) *latency += topo_.links()[static_cast<std::size_t>(l)].latency_s;
    }
  }

  static std::uint64_t key(int src, int dst) { return (std::uint64_t(std::uint32_t(src)) << 32) | std::uint32_t(dst); }

  std::vector<simgrid::kernel::resource::StandardLinkImpl*> impls_;
  std::unordered_map<std::uint64_t, std::pair<std::vector<int>, double>> proxy_routes_;
  const Topology topo_;  // a copy (O(links)), so the zone needs nothing from its caller after building
};

}  // namespace

Platform build_platform(const Topology& topo, int proxies) {
  if (sg4::Engine::get_instance()->get_netzone_root() != nullptr) {
    throw Error("sim: build_platform needs a fresh SimGrid engine: its zone must be the platform's root");
  }
  // The first zone created becomes the root, which the engine owns and deletes.
  auto* impl = new TopologyZone(topo);
  sg4::NetZone* zone = impl->get_iface();
  Platform p;
  p.proxy_routes = impl;
  // Compute is priced by the cost model and run as a delay on the GPU's compute stream, so the
  // host speed only has to be positive.
  auto add_host = [&](const std::string& name, int id) {
    sg4::Host* h = zone->create_host(name, 1e12)->seal();
    if (h->get_netpoint()->id() != static_cast<unsigned long>(id)) {
      throw Error("sim: SimGrid numbered host " + name + " " + std::to_string(h->get_netpoint()->id()) +
                  "; TopologyZone reads ids as ranks, then proxies");
    }
    return h;
  };
  for (int r = 0; r < topo.world(); ++r) p.gpus.push_back(add_host("gpu" + std::to_string(r), r));
  for (int i = 0; i < proxies; ++i) p.proxies.push_back(add_host("proxy" + std::to_string(i), topo.world() + i));
  for (const LinkSpec& l : topo.links()) {
    impl->add_link(zone->create_link(l.name, l.bw_Bps)->set_latency(l.latency_s)->seal());
  }
  zone->seal();
  return p;
}

}  // namespace dmuon::sim
