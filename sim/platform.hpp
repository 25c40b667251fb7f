// The SimGrid platform of a Topology: one host per GPU and one SimGrid link per Topology link
// (research/sim-anchors.md 1.2 layout A: per-GPU NVLink ports, per-NIC rails, rail uplinks to a
// spine), in one netzone that asks Topology::route for each route when SimGrid needs it, so the
// platform grows with the links, not with GPU pairs; and, if asked, proxy hosts whose routes the
// runner sets per task (proxy_task.hpp). Call in a fresh Engine (the zone must be
// its root), after the engine settings (network_model.hpp) and before running.
#pragma once
#include <vector>

#include "sim/topology.hpp"

namespace simgrid::s4u {
class Host;
}

namespace dmuon::sim {

// Routes between proxy hosts: the links and latency the task in flight on them set
// (proxy_task.hpp). Proxies are numbered 0 .. Platform::proxies.size() - 1.
class ProxyRoutes {
 public:
  virtual ~ProxyRoutes() = default;
  virtual void set(int src, int dst, std::vector<int> links, double latency_s) = 0;
  virtual void clear(int src, int dst) = 0;
};

struct Platform {
  std::vector<simgrid::s4u::Host*> gpus;     // in global rank order
  std::vector<simgrid::s4u::Host*> proxies;  // hosts without GPU that stand in for a task's endpoints
  ProxyRoutes* proxy_routes = nullptr;       // the platform's zone, which the engine owns
};

Platform build_platform(const Topology& topo, int proxies = 0);

}  // namespace dmuon::sim
