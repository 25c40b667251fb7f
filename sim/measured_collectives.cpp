#include "sim/measured_collectives.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace dmuon::sim {

double curve_bytes(const CollectiveCall& call) {
  if (call.kind != OpKind::all_to_all) return call.bytes;
  std::map<int, double> sent, received;
  for (const auto& [src, dst, bytes] : call.transfers) sent[src] += bytes, received[dst] += bytes;
  double most = 0;
  for (const auto* m : {&sent, &received}) {
    for (const auto& [rank, bytes] : *m) most = std::max(most, bytes);
  }
  return most;
}

void apply_measured_collectives(StepProgram& program, const CostModel& cost, int gpus_per_node) {
  std::vector<std::string> source(program.collectives.size(), "datasheet");
  for (std::size_t i = 0; i < program.collectives.size(); ++i) {
    SimCollective& c = program.collectives[i];
    const auto& members = c.call.members;
    std::set<int> nodes;
    for (int r : members) nodes.insert(r / gpus_per_node);
    if (members.size() == 1) source[i] = std::string(source_class(cost.elementwise_time(2 * c.call.bytes).source));
    if (nodes.size() != 1) continue;
    const int ranks = static_cast<int>(members.size());
    const auto seconds = cost.collective_seconds(c.call.kind, ranks, 1, curve_bytes(c.call));
    if (!seconds) continue;
    source[i] = "measured";
    if (ranks == 1) {
      // The op's NCCL calls run in one group (kernels/exec/collectives.cpp): each call past the
      // first adds what the calibration's grouped-call probe measured for its kind at the group's
      // bytes (older files: the kind's cheapest isolated call, which overprices it: an isolated
      // call pays a group's entry and exit; core/cost/grouped_calls.hpp). In place on one rank a
      // broadcast or all-gather launches nothing, a reduce or all-reduce does.
      const double extra_call_s = *cost.local_extra_call_seconds(c.call.kind, curve_bytes(c.call));
      c.local_seconds = *seconds + std::max(0, c.calls - 1) * extra_call_s + cost.local_collective_step_overhead_s();
    } else {
      // Inside a step each NCCL call also pays what its isolated curve does not see
      // (core/cost/step_overhead.hpp; 0 without the key).
      c.measured_seconds = *seconds + std::max(1, c.calls) * cost.collective_step_overhead_s();
    }
  }
  for (auto& ops : program.ranks) {
    for (auto& op : ops) {
      if (op.collective >= 0) op.source = source[static_cast<std::size_t>(op.collective)];
    }
  }
}

MeasuredRun measured_run(const CollectiveSchedule& schedule, const Topology& topo, double measured_s, SimMode mode) {
  MeasuredRun run;
  run.schedule = schedule;
  double latency_s = 0, bandwidth_s = 0;
  if (mode == SimMode::fast) {
    const FastSummary f = summarize(schedule, topo);
    latency_s = f.max_route_latency_s;
    bandwidth_s = f.busiest_link_s;
  } else {
    CollectiveSchedule empty = schedule;
    for (auto& e : empty.edges) e.bytes_per_step = 0;
    latency_s = isolated_seconds(empty, topo);
    bandwidth_s = isolated_seconds(schedule, topo) - latency_s;
  }
  if (!(measured_s > latency_s) || !(bandwidth_s > 0)) {
    run.schedule.edges.clear();
    run.wait_s = measured_s;
    return run;
  }
  const double scale = (measured_s - latency_s) / bandwidth_s;
  for (auto& e : run.schedule.edges) e.bytes_per_step *= scale;
  if (mode == SimMode::fast) run.summary = summarize(run.schedule, topo);
  return run;
}

}  // namespace dmuon::sim
