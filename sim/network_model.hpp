// SimGrid engine settings every dmuon simulation uses: the CM02 network model without
// cross-traffic and without the TCP-gamma window bound (research/sim-anchors.md 1.5-1.6: the
// default LV08 multiplies latency by 13.01 and caps flows at gamma/(2*latency)).
#pragma once

namespace dmuon::sim {

// Must run before the platform is created. Also silences SimGrid's INFO lines about
// configuration changes.
void configure_network_model();

}  // namespace dmuon::sim
