// SimGrid engine settings every dmuon simulation uses.
// flows: the CM02 network model without cross-traffic and without the TCP-gamma window bound
//   (research/sim-anchors.md 1.5-1.6: the default LV08 multiplies latency by 13.01 and caps
//   flows at gamma/(2*latency)); every send is a flow, max-min fair sharing on each link.
// fast: the ptask_L07 host model, so a whole collective can run as one parallel task whose
//   parts all progress at the rate of its bottleneck link (sim-anchors.md 1.3, probe t5/t6).
#pragma once

namespace dmuon::sim {

// Must run before the platform is created. Also silences SimGrid's INFO lines about
// configuration changes.
void configure_network_model();
// keep_marking_walk: let SimGrid mark what each change touches, which the fast model's solver
// never reads (l07_selective_update.hpp); off, the default, skips it.
void configure_fast_model(bool keep_marking_walk = false);

}  // namespace dmuon::sim
