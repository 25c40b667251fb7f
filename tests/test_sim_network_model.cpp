// With dmuon's network model settings a point-to-point message costs exactly latency +
// size/bandwidth (CM02, no factors); SimGrid's default model would give ~13x the latency.
#include <simgrid/s4u.hpp>

#include "catch_compat.hpp"
#include "sim/network_model.hpp"

namespace sg4 = simgrid::s4u;

TEST_CASE("CM02 point-to-point time is latency + bytes / bandwidth", "[sim]") {
  int argc = 1;
  char name[] = "test_sim_network_model";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  dmuon::sim::configure_network_model();
  auto* zone = sg4::create_full_zone("root");
  auto* a = zone->create_host("a", 1e12)->seal();
  auto* b = zone->create_host("b", 1e12)->seal();
  const double bw_Bps = 50e9, latency_s = 2e-6, bytes = 1e9;
  auto* link = zone->create_split_duplex_link("l", bw_Bps)->set_latency(latency_s)->seal();
  zone->add_route(a->get_netpoint(), b->get_netpoint(), nullptr, nullptr,
                  {{link, sg4::LinkInRoute::Direction::UP}}, true);
  zone->seal();
  double seconds = -1;
  sg4::Actor::create("sender", a, [&] {
    const double t0 = sg4::Engine::get_clock();
    sg4::Comm::sendto_async(a, b, static_cast<uint64_t>(bytes))->wait();
    seconds = sg4::Engine::get_clock() - t0;
  });
  engine.run();
  CHECK(seconds == Approx(latency_s + bytes / bw_Bps).epsilon(1e-9));
}
