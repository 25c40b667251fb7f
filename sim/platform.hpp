// The SimGrid platform of a Topology: one host per GPU and one SimGrid link per Topology link
// (research/sim-anchors.md 1.2 layout A: per-GPU NVLink ports, per-NIC rails, rail uplinks to a
// spine), in one netzone that asks Topology::route for each route when SimGrid needs it, so the
// platform grows with the links, not with GPU pairs. Call in a fresh Engine (the zone must be
// its root), after the engine settings (network_model.hpp) and before running.
#pragma once
#include <vector>

#include "sim/topology.hpp"

namespace simgrid::s4u {
class Host;
}

namespace dmuon::sim {

// Hosts in global rank order.
std::vector<simgrid::s4u::Host*> build_platform(const Topology& topo);

}  // namespace dmuon::sim
