#include "sim/network_model.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <xbt/log.h>

namespace dmuon::sim {

void configure_network_model() {
  xbt_log_control_set("root.thresh:critical");
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config("network/TCP-gamma:0");
}

void configure_fast_model() {
  xbt_log_control_set("root.thresh:critical");
  simgrid::s4u::Engine::set_config("host/model:ptask_L07");
}

}  // namespace dmuon::sim
