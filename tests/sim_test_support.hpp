// Helpers of the simulator tests: clusters and one-collective programs.
#pragma once
#include <numeric>
#include <vector>

#include "core/io/scenario.hpp"
#include "sim/simulator.hpp"

namespace dmuon::simtest {

// `nodes` x `gpus` with round numbers: NVLink 100 GB/s, 2 us per step; NIC 25 GB/s (200 Gb/s),
// 10 us; one NIC per GPU; efficiency 1, so closed forms use the line rates.
inline ClusterSpec cluster(int nodes, int gpus, int channels = 8) {
  ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = gpus;
  c.gpu = "h100-sxm";
  c.nvlink = NvlinkSpec{100, 2, 1};
  c.network = InterNodeSpec{gpus, 200, 10, 1, 1, 1};
  c.nccl.base_latency_us = 8;
  c.nccl.channels = channels;
  c.nccl.chunk_bytes = 1 << 20;
  return c;
}

inline std::vector<int> ranks(int n, int stride = 1) {
  std::vector<int> r(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = i * stride;
  return r;
}

// Every member runs the one collective; the others are idle.
inline sim::StepProgram one_collective(const sim::CollectiveCall& call, int world) {
  sim::StepProgram p;
  p.ranks.resize(static_cast<std::size_t>(world));
  sim::SimCollective c;
  c.call = call;
  c.group = "test";
  p.collectives.push_back(c);
  for (int r : call.members) {
    sim::SimOp op;
    op.stream = sim::kGatherStream;
    op.category = "collective";
    op.collective = 0;
    p.ranks[static_cast<std::size_t>(r)].push_back(op);
  }
  return p;
}

inline double collective_seconds(const sim::CollectiveCall& call, const ClusterSpec& c, SimMode mode) {
  sim::SimOptions o;
  o.mode = mode;
  const auto out = sim::simulate(one_collective(call, static_cast<int>(c.world_size())), c, o);
  return out.collectives.at(0).seconds();
}

}  // namespace dmuon::simtest
