// The runner's waits (sim/runner.hpp timed_sleep_until / timed_sleep_for): a kernel timer and a
// suspend/resume pair in place of SimGrid's sleep. An actor resumes at exactly the date asked,
// whatever else the engine runs meanwhile (transfers, other sleepers, actors resumed by others),
// and back-to-back waits add up. SimGrid allows one Engine per process, hence one test case.
#include <simgrid/s4u.hpp>

#include <vector>

#include "catch_compat.hpp"
#include "sim/network_model.hpp"
#include "sim/platform.hpp"
#include "sim/runner.hpp"
#include "sim/topology.hpp"
#include "sim_test_support.hpp"

namespace sg4 = simgrid::s4u;
using namespace dmuon;

TEST_CASE("the runner's timed waits end at the dates asked, beside transfers and other waits", "[sim][runner]") {
  const sim::Topology topo(simtest::cluster(1, 2));
  int argc = 1;
  char name[] = "test_sim_timed_sleep";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  sim::configure_network_model();
  const std::vector<sg4::Host*> hosts = sim::build_platform(topo).gpus;

  std::vector<double> a, b, c;
  double transfer_end = -1, lone_transfer = -1;
  sg4::Actor* parked = nullptr;
  // Waits that add up: 1.5 + 2.25 (1/4 and 1/2 are exact in binary, so the sum is too).
  sg4::Actor::create("a", hosts[0], [&] {
    sim::timed_sleep_for(1.5);
    a.push_back(sg4::Engine::get_clock());
    parked->resume();  // wakes "c" at 1.5
    sim::timed_sleep_for(2.25);
    a.push_back(sg4::Engine::get_clock());
  });
  // An absolute date, the same as another actor's, and a wait of zero (ends at once).
  sg4::Actor::create("b", hosts[1], [&] {
    sim::timed_sleep_until(3.75);
    b.push_back(sg4::Engine::get_clock());
    sim::timed_sleep_for(0);
    b.push_back(sg4::Engine::get_clock());
  });
  // Suspended until another actor resumes it, then a wait from there.
  sg4::Actor::create("c", hosts[1], [&] {
    parked = sg4::Actor::self();
    sg4::this_actor::suspend();
    c.push_back(sg4::Engine::get_clock());
    sim::timed_sleep_for(0.125);
    c.push_back(sg4::Engine::get_clock());
  });
  // A transfer under way while the others wait: it takes what it takes alone (timed first).
  sg4::Actor::create("t", hosts[0], [&] {
    const double t0 = sg4::Engine::get_clock();
    sg4::Comm::sendto(hosts[0], hosts[1], 1 << 20);
    lone_transfer = sg4::Engine::get_clock() - t0;
    sim::timed_sleep_until(1.0);
    sg4::Comm::sendto(hosts[0], hosts[1], 1 << 20);
    transfer_end = sg4::Engine::get_clock();
  });
  engine.run();

  REQUIRE(a == std::vector<double>{1.5, 3.75});
  REQUIRE(b == std::vector<double>{3.75, 3.75});
  REQUIRE(c == std::vector<double>{1.5, 1.625});
  REQUIRE(lone_transfer > 0);
  REQUIRE(lone_transfer < 1.0);
  REQUIRE(transfer_end == Approx(1.0 + lone_transfer).epsilon(1e-12));
  REQUIRE(sg4::Engine::get_clock() == 3.75);
}
