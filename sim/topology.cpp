#include "sim/topology.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/error.hpp"

namespace dmuon::sim {
namespace {

// Each dimension's bound (checked()), so that ranks and link indices (about 4 a GPU) are ints.
// What a smaller cluster costs to simulate is the memory estimate's to refuse
// (memory_estimate.hpp): the platform holds no per-pair state, its zone computes each route
// on demand (platform.cpp).
constexpr std::int64_t kMaxGpus = 1 << 20;

int checked(std::int64_t v, const std::string& key) {
  if (v < 1 || v > (1 << 20)) throw Error(key + ": must be in [1, 1048576], got " + std::to_string(v));
  return static_cast<int>(v);
}

}  // namespace

Topology::Topology(const ClusterSpec& c) {
  nodes_ = checked(c.nodes, "cluster.nodes");
  gpus_per_node_ = checked(c.gpus_per_node, "cluster.gpus_per_node");
  if (gpus_per_node_ > 1 && !c.nvlink) {
    throw Error("cluster.nvlink: missing; the simulator needs bw_GBps for " + std::to_string(gpus_per_node_) +
                " GPUs per node");
  }
  if (nodes_ > 1 && !c.network) {
    throw Error("cluster.network: missing; the simulator needs nic_bw_Gbps for " + std::to_string(nodes_) + " nodes");
  }
  if (c.network) {
    nics_ = checked(c.network->nics_per_node, "cluster.network.nics_per_node");
    if (gpus_per_node_ % nics_ != 0) {
      throw Error("cluster.network.nics_per_node: " + std::to_string(nics_) + " does not divide gpus_per_node " +
                  std::to_string(gpus_per_node_));
    }
  }
  const std::int64_t gpus = std::int64_t(nodes_) * gpus_per_node_;
  if (gpus > kMaxGpus) {
    throw Error("cluster: " + std::to_string(gpus) + " GPUs (cluster.nodes x cluster.gpus_per_node) exceed the simulator's " +
                std::to_string(kMaxGpus));
  }
  const int world = static_cast<int>(gpus);
  const NvlinkSpec nvl = c.nvlink.value_or(NvlinkSpec{1, 0, 1});  // unused with one GPU per node
  for (int r = 0; r < world; ++r) {
    const std::string n = "n" + std::to_string(node_of(r)) + "g" + std::to_string(local_of(r));
    // The per-step latency is charged once per route: on the sending port.
    links_.push_back({n + "_nvl_up", LinkClass::nvlink, nvl.bw_GBps * 1e9 * nvl.efficiency, nvl.latency_us * 1e-6});
    links_.push_back({n + "_nvl_dn", LinkClass::nvlink, nvl.bw_GBps * 1e9 * nvl.efficiency, 0});
  }
  nic_base_ = static_cast<int>(links_.size());
  if (!c.network) return;
  const InterNodeSpec& net = *c.network;
  const double nic_Bps = net.nic_bw_Gbps / 8 * 1e9 * net.efficiency;
  for (int node = 0; node < nodes_; ++node) {
    for (int i = 0; i < nics_; ++i) {
      const std::string n = "n" + std::to_string(node) + "nic" + std::to_string(i);
      links_.push_back({n + "_up", LinkClass::nic, nic_Bps, net.latency_us * 1e-6});
      links_.push_back({n + "_dn", LinkClass::nic, nic_Bps, 0});
    }
  }
  spine_base_ = static_cast<int>(links_.size());
  // A rail's leaf switch carries at most all of its NICs at once; oversubscription divides it.
  const double rail_Bps = nodes_ * nic_Bps / net.spine_oversubscription;
  for (int i = 0; i < nics_; ++i) {
    links_.push_back({"rail" + std::to_string(i) + "_up", LinkClass::spine, rail_Bps, net.spine_latency_us * 1e-6});
    links_.push_back({"rail" + std::to_string(i) + "_dn", LinkClass::spine, rail_Bps, 0});
  }
}

int Topology::rail_of(int rank) const { return local_of(rank) / (gpus_per_node_ / nics_); }

Route Topology::route(int src, int dst) const {
  if (node_of(src) == node_of(dst)) return {{nvl_up(src), nvl_dn(dst), 0, 0}, 2};
  const int rs = rail_of(src), rd = rail_of(dst);
  if (rs == rd) return {{nic_up(node_of(src), rs), nic_dn(node_of(dst), rd), 0, 0}, 2};
  return {{nic_up(node_of(src), rs), spine_up(rs), spine_dn(rd), nic_dn(node_of(dst), rd)}, 4};
}

double Topology::route_latency_s(int src, int dst) const {
  double s = 0;
  for (int l : route(src, dst)) s += links_[static_cast<std::size_t>(l)].latency_s;
  return s;
}

double Topology::route_bw_Bps(int src, int dst) const {
  double bw = std::numeric_limits<double>::infinity();
  for (int l : route(src, dst)) bw = std::min(bw, links_[static_cast<std::size_t>(l)].bw_Bps);
  return bw;
}

}  // namespace dmuon::sim
