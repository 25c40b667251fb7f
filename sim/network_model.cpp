#include "sim/network_model.hpp"

#include "sim/l07_selective_update.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <xbt/log.h>

namespace dmuon::sim {

void configure_network_model() {
  xbt_log_control_set("root.thresh:critical");
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config("network/TCP-gamma:0");
  skip_marking_walk(false);  // MaxMin solves the constraints marked
}

void configure_fast_model(bool keep_marking_walk) {
  xbt_log_control_set("root.thresh:critical");
  simgrid::s4u::Engine::set_config("host/model:ptask_L07");
  skip_marking_walk(!keep_marking_walk);
}

}  // namespace dmuon::sim
