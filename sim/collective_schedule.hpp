// NCCL's collective algorithms as schedules of point-to-point sends: which rank sends how many
// bytes to which, in which pipeline steps. One schedule drives both simulation modes: `flows`
// sends every step's edges as SimGrid flows, `fast` sends all bytes as one parallel task (whose
// time stretches under other traffic) and adds what the same schedule alone would spend beyond
// its busiest link's bytes: per-step latencies and pipeline fill.
//   ring all-reduce:       2(p-1) steps, every ring edge carries S/(p C) per step and channel
//   ring all-gather / reduce-scatter: p-1 steps, S/(p C) per step and channel
//   pipelined broadcast / reduce: a chain from (to) the root, k = ceil(S / (C chunk)) chunks,
//                          p-2+k steps
//   tree all-reduce:       NCCL's double binary tree (two trees, S/2 each): intra-node chains
//                          to a node leader, a binary tree of leaders; reduce up, broadcast down,
//                          pipelined in chunks
//   all-to-all:            every pair's bytes at once (one step)
// Rings are NCCL's: channel c visits each node's GPUs in a rotated order chosen so that every
// node-exit edge stays on one rail (same local GPU, hence same NIC, on both ends).
#pragma once
#include <string>
#include <tuple>
#include <vector>

#include "core/plan/plan.hpp"
#include "core/io/scenario.hpp"
#include "sim/topology.hpp"

namespace dmuon::sim {

// What one (possibly coalesced) collective asks for, independent of the algorithm.
struct CollectiveCall {
  OpKind kind = OpKind::all_reduce;
  std::vector<int> members;  // global ranks, in group order
  double bytes = 0;          // nccl-tests "size": buffer (all-reduce), gathered output (AG), ...
  // broadcast/reduce: (root, bytes) of each coalesced call; they run concurrently.
  std::vector<std::pair<int, double>> rooted;
  // all_to_all: (src, dst, bytes) of each transfer.
  std::vector<std::tuple<int, int, double>> transfers;
};

struct ScheduleEdge {
  int src = 0, dst = 0;
  int first_step = 0;  // the pipeline step it starts sending in
  int steps = 1;       // consecutive steps it sends in
  double bytes_per_step = 0;
};

struct CollectiveSchedule {
  std::string algorithm;  // "ring", "tree", "chain", "direct", "none"
  int total_steps = 0;
  std::vector<ScheduleEdge> edges;
};

// The busbw/algbw factor of nccl-tests (doc/PERFORMANCE.md) for a group of p ranks.
double bus_factor(OpKind kind, int p);

// The schedule NCCL would run. all_reduce picks ring or tree as `nccl.all_reduce` says; `auto`
// takes the one with the lower isolated estimate, as NCCL's tuner does with its own model.
// With nccl.size_efficiency, every edge's bytes are divided by the efficiency at the call's size.
CollectiveSchedule make_schedule(const CollectiveCall& call, const Topology& topo, const NcclSpec& nccl);

// What `fast` mode needs from a schedule.
struct FastSummary {
  std::vector<std::tuple<int, int, double>> pair_bytes;  // (src, dst, total bytes), merged
  // The schedule alone on the cluster, step by step as `flows` runs it: a step ends when its
  // last link drains, a link being busy from the first arrival of its flows (their route
  // latency) for its bytes over its bandwidth (NVLink port, NIC port or rail uplink).
  double isolated_s = 0;
  // The busiest link's total bytes over its bandwidth: what a parallel task of pair_bytes takes
  // without other traffic (beyond the latency it charges once, max_route_latency_s).
  double busiest_link_s = 0;
  double max_route_latency_s = 0;
};
FastSummary summarize(const CollectiveSchedule& schedule, const Topology& topo);

// Seconds of the schedule alone on the cluster (no other traffic, no launch latency):
// FastSummary::isolated_s. Used by `auto` and by the closed-form tests.
double isolated_seconds(const CollectiveSchedule& schedule, const Topology& topo);

}  // namespace dmuon::sim
