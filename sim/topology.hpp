// The modelled cluster as plain numbers: which links exist (NVLink ports, NIC ports, rail
// uplinks to the spine), their bandwidth and latency, and the route between any two GPUs.
// SimGrid-free, so the collective schedules and the analytic estimates share it with the
// platform builder (platform.cpp), which turns the same links into SimGrid links.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "core/io/scenario.hpp"

namespace dmuon::sim {

enum class LinkClass { nvlink, nic, spine };

struct LinkSpec {
  std::string name;
  LinkClass cls = LinkClass::nvlink;
  double bw_Bps = 0;     // effective: line rate x NCCL efficiency
  double latency_s = 0;  // charged once per route that uses the link
};

// The links of one route, in order: at most 4 (NIC up, rail up, rail down, NIC down).
struct Route {
  std::array<int, 4> links{};
  int size = 0;
  const int* begin() const { return links.data(); }
  const int* end() const { return links.data() + size; }
  int front() const { return links[0]; }
  int back() const { return links[static_cast<std::size_t>(size - 1)]; }
};

// Global rank r = node * gpus_per_node + local GPU (the HSDP mesh's order).
class Topology {
 public:
  // Throws dmuon::Error naming cluster.nvlink / cluster.network when a section the cluster
  // needs is missing (NVLink for more than one GPU per node, the network for more than one node).
  explicit Topology(const ClusterSpec& cluster);

  int world() const { return nodes_ * gpus_per_node_; }
  int nodes() const { return nodes_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int node_of(int rank) const { return rank / gpus_per_node_; }
  int local_of(int rank) const { return rank % gpus_per_node_; }
  int rail_of(int rank) const;  // the NIC (rail) a GPU's network traffic uses

  const std::vector<LinkSpec>& links() const { return links_; }
  // Link indices of the route src -> dst, in order (src != dst).
  Route route(int src, int dst) const;
  double route_latency_s(int src, int dst) const;
  // Bandwidth of the slowest link of the route (without contention).
  double route_bw_Bps(int src, int dst) const;

 private:
  int nvl_up(int r) const { return 2 * r; }
  int nvl_dn(int r) const { return 2 * r + 1; }
  int nic_up(int node, int nic) const { return nic_base_ + 2 * (node * nics_ + nic); }
  int nic_dn(int node, int nic) const { return nic_base_ + 2 * (node * nics_ + nic) + 1; }
  int spine_up(int rail) const { return spine_base_ + 2 * rail; }
  int spine_dn(int rail) const { return spine_base_ + 2 * rail + 1; }

  int nodes_ = 1, gpus_per_node_ = 1, nics_ = 1;
  int nic_base_ = 0, spine_base_ = 0;
  std::vector<LinkSpec> links_;
};

}  // namespace dmuon::sim
