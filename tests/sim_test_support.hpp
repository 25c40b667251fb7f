// Helpers of the simulator tests: clusters and one-collective programs.
#pragma once
#include <numeric>
#include <string>
#include <vector>

#include "catch_compat.hpp"
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

// `nodes` x `gpus` H100s training a small model (2 blocks whose 2048-row matrices split unevenly
// over 3 GPUs a node): the replica fold and lockstep tests' scenario.
inline Scenario replica_scenario(int nodes, int gpus, bool z3, bool copies, int layers = 2) {
  return parse_scenario(
      "name: fold\n"
      "model:\n  name: small\n  transformer: {hidden: 2048, layers: " + std::to_string(layers) +
      ", heads: 16, ffn: 5632, vocab: 4096}\n"
      "optimizer: {preset: dmuon}\n"
      "cluster:\n  nodes: " + std::to_string(nodes) + "\n  gpus_per_node: " + std::to_string(gpus) +
      "\n  gpu: h100-sxm\n  gpu_memory_GiB: 80\n"
      "  nvlink: {bw_GBps: 200, latency_us: 3.4, efficiency: 0.8}\n"
      "  network: {nics_per_node: " + std::to_string(gpus) + ", nic_bw_Gbps: 200, latency_us: 14, efficiency: 0.96}\n"
      "training: {seq_len: 1024, micro_batch: 1, mfu: 0.4, peak_tflops: 989, reshard_after_forward: " +
      (z3 ? "true" : "false") + ", fsdp2_copies: " + (copies ? "true" : "false") + "}\n",
      "fold.yaml");
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

// Every date and figure of two outcomes equal (not within a tolerance).
inline void same_outcome(const sim::SimOutcome& a, const sim::SimOutcome& b) {
  CHECK(a.step_s == b.step_s);
  CHECK(a.grads_ready_s == b.grads_ready_s);
  CHECK(a.critical_compute_busy_s == b.critical_compute_busy_s);
  CHECK(a.optimizer_compute_s == b.optimizer_compute_s);
  CHECK(a.critical_seconds_by_source == b.critical_seconds_by_source);
  REQUIRE(a.collectives.size() == b.collectives.size());
  for (std::size_t c = 0; c < a.collectives.size(); ++c) {
    INFO("collective " << c << " " << a.collectives[c].label);
    CHECK(a.collectives[c].start_s == b.collectives[c].start_s);
    CHECK(a.collectives[c].end_s == b.collectives[c].end_s);
    CHECK(a.collectives[c].algorithm == b.collectives[c].algorithm);
    CHECK(a.collectives[c].group == b.collectives[c].group);
  }
}

}  // namespace dmuon::simtest
