// How many channels (rings) NCCL gives a communicator, derived from the node's links the way
// NCCL derives it, so that a scenario need not assume a count (issue 12 item 7).
//
// The rules, as NVIDIA/nccl at 5067397 (2026-06-11) writes them, for the ring graph, whose
// channel count becomes the communicator's (src/init.cc: nChannels = min(tree, ring)):
//  1. Link bandwidths NCCL models (src/graph/topo.h, topo.cc): NVLink 20 GB/s a link on sm80,
//     20.6 on sm90; PCIe width x per-lane rate (Gen4 x16 = 24 GB/s, Gen5 x16 = 48); a NIC its
//     line rate in Mb/s / 8000.
//  2. Search (src/graph/search.cc ncclTopoCompute): speeds from a per-architecture list
//     (sm80 intra 40, 30, 20, ...; inter 48, 30, 28, 24, ...; sm90 intra 60, 50, 40, ...; inter
//     48, 45, 42, 40, 30, 24, ...), starting at the first one <= maxBw (the GPU's best path: its
//     NIC path inter-node, its NVLink total intra-node). At speed s as many channels as every
//     link can carry (each channel takes s on every GPU's NVLink, and on the NIC and PCIe link it
//     enters and leaves by), at most 32 (MAXCHANNELS / 2). It stops when channels x s reaches
//     totalBw (max of the GPU's NVLink total and PCIe), else tries slower speeds while the next
//     one is above 0.49 of the best so far, keeping the most channels x s.
//  3. ncclTopoDupChannels: doubles the channels (halving s) when s >= 25, except on sm90 with
//     s < 50 and more than 4 channels.
//  4. ncclTopoPostset (src/graph/connect.cc): "Duplication should be complete now":
//     doubles again (at most 64); on sm90 across nodes with s > 45 and fewer than 16, doubles
//     once more.
// What this leaves out: PXN and cross-NIC routes (a GPU reaches only its own rail's NIC), PCIe
// switches shared by two GPUs and a NIC (the GPU's PCIe link is its own), NVLS/CollNet graphs,
// NCCL_MIN/MAX_NCHANNELS and the child communicator cap of ncclCommSplit with splitShare.
// Checked against: nccl-tests#108's log "Channel 00/02" (one A100 per node, one HDR NIC) and the
// 24 channels NCCL logs on one 8-GPU A100 node (tests/test_nccl_channels.cpp).
#pragma once
#include <optional>
#include <string>

namespace dmuon {

struct NcclNodeLinks {
  int compute_capability = 0;  // 80 (A100/A800), 90 (H100/H200)
  double nvlink_GBps = 0;      // NVLink line rate per direction of one GPU (0: none)
  double pcie_GBps = 0;        // NCCL's model of the GPU's PCIe link (Gen4 x16 24, Gen5 x16 48)
  double nic_GBps = 0;         // one NIC, NCCL's model: Mb/s / 8000 (0: no network)
  int nics_per_node = 0;
};

struct RingChannels {
  int searched = 0;       // channels the search found
  double speed_GBps = 0;  // their speed
  int channels = 0;       // after ncclTopoDupChannels and ncclTopoPostset
};

// A communicator with `gpus_per_node` of its GPUs on each of `nodes` nodes.
RingChannels nccl_ring_channels(const NcclNodeLinks& links, int gpus_per_node, int nodes);

// Compute capability and PCIe link of the built-in GPUs (datasheets: A800/A100 SXM4 sm80 on
// PCIe Gen4, H100/H200 SXM5 sm90 on PCIe Gen5), by the names core/cost/device_profile knows;
// nullopt for any other name.
std::optional<NcclNodeLinks> nccl_gpu_links(const std::string& gpu);

}  // namespace dmuon
