#include "sim/platform.hpp"

#include <simgrid/s4u.hpp>

namespace dmuon::sim {

namespace sg4 = simgrid::s4u;

std::vector<sg4::Host*> build_platform(const Topology& topo) {
  auto* zone = sg4::create_full_zone("cluster");
  std::vector<sg4::Host*> hosts;
  for (int r = 0; r < topo.world(); ++r) {
    // Compute is priced by the cost model and run as a delay on the GPU's compute stream, so the
    // host speed only has to be positive.
    hosts.push_back(zone->create_host("gpu" + std::to_string(r), 1e12)->seal());
  }
  std::vector<sg4::Link*> links;
  for (const LinkSpec& l : topo.links()) {
    links.push_back(zone->create_link(l.name, l.bw_Bps)->set_latency(l.latency_s)->seal());
  }
  for (int a = 0; a < topo.world(); ++a) {
    for (int b = 0; b < topo.world(); ++b) {
      if (a == b) continue;
      std::vector<sg4::LinkInRoute> route;
      for (int l : topo.route(a, b)) route.emplace_back(links[static_cast<std::size_t>(l)]);
      zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr, route, false);
    }
  }
  zone->seal();
  return hosts;
}

}  // namespace dmuon::sim
