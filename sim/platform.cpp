#include "sim/platform.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/asserts.h>

#include "core/error.hpp"

namespace dmuon::sim {
namespace {

namespace sg4 = simgrid::s4u;
namespace routing = simgrid::kernel::routing;

// A netzone that asks the Topology for each route when SimGrid needs it (a transfer starting
// under CM02, a parallel task under ptask_L07), instead of storing one per ordered GPU pair as
// the FullZone before it did: 119 B a route, 127 MB at 1,024 GPUs and 8 GB at 8,192
// (memory_estimate.cpp). A route is at most 4 links, so computing it is a few index operations.
class TopologyZone final : public routing::NetZoneImpl {
 public:
  explicit TopologyZone(const Topology& topo) : NetZoneImpl("cluster"), topo_(topo) {}

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
  // netpoint ids are ranks (build_platform adds the hosts first, in rank order, and checks).
  void get_local_route(const routing::NetPoint* src, const routing::NetPoint* dst, routing::Route* into,
                       double* latency) override {
    // A FullZone would route a GPU to itself over the network model's loopback link, which
    // 3.32's installed headers do not expose; dmuon never sends to itself (collective_schedule
    // drops src == dst edges), so a self-route is a bug to stop at, not to price.
    xbt_assert(src != dst, "dmuon platform: no route from %s to itself", src->get_cname());
    const Route route = topo_.route(static_cast<int>(src->id()), static_cast<int>(dst->id()));
    into->link_list_.reserve(into->link_list_.size() + static_cast<std::size_t>(route.size));
    for (int l : route) {
      into->link_list_.push_back(impls_[static_cast<std::size_t>(l)]);
      // The latency the link was created with (build_platform), as link->get_latency() reads it.
      if (latency) *latency += topo_.links()[static_cast<std::size_t>(l)].latency_s;
    }
  }

  std::vector<simgrid::kernel::resource::StandardLinkImpl*> impls_;
  const Topology topo_;  // a copy (O(links)), so the zone needs nothing from its caller after building
};

}  // namespace

std::vector<sg4::Host*> build_platform(const Topology& topo) {
  if (sg4::Engine::get_instance()->get_netzone_root() != nullptr) {
    throw Error("sim: build_platform needs a fresh SimGrid engine: its zone must be the platform's root");
  }
  // The first zone created becomes the root, which the engine owns and deletes.
  auto* impl = new TopologyZone(topo);
  sg4::NetZone* zone = impl->get_iface();
  std::vector<sg4::Host*> hosts;
  for (int r = 0; r < topo.world(); ++r) {
    // Compute is priced by the cost model and run as a delay on the GPU's compute stream, so the
    // host speed only has to be positive.
    hosts.push_back(zone->create_host("gpu" + std::to_string(r), 1e12)->seal());
    if (hosts.back()->get_netpoint()->id() != static_cast<unsigned long>(r)) {
      throw Error("sim: SimGrid numbered host gpu" + std::to_string(r) + " " +
                  std::to_string(hosts.back()->get_netpoint()->id()) + "; TopologyZone reads ids as ranks");
    }
  }
  for (const LinkSpec& l : topo.links()) {
    impl->add_link(zone->create_link(l.name, l.bw_Bps)->set_latency(l.latency_s)->seal());
  }
  zone->seal();
  return hosts;
}

}  // namespace dmuon::sim
