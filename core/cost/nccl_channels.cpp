#include "core/cost/nccl_channels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"

namespace dmuon {
namespace {

// src/graph/search.cc: speedArrayIntra/Inter (before sm90) and sm90SpeedArrayIntra/Inter, GB/s.
const std::vector<double>& speeds(bool inter, int cc) {
  static const std::vector<double> intra80{40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
  static const std::vector<double> inter80{48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12};
  static const std::vector<double> intra90{60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
  static const std::vector<double> inter90{48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
  if (cc >= 90) return inter ? inter90 : intra90;
  return inter ? inter80 : intra80;
}

constexpr int kMaxRingChannels = 32;  // ringGraph->maxChannels = MAXCHANNELS / 2 (src/init.cc)
constexpr int kMaxChannels = 64;      // MAXCHANNELS (src/include/device.h)

// NCCL's NVLink model of one GPU: its links (25 GB/s a direction each on NVLink 3 and 4, so
// line rate / 25) at 20 GB/s (sm80) or 20.6 (sm90) each (src/graph/topo.h SM80/SM90_NVLINK_BW).
double nvlink_model_GBps(const NcclNodeLinks& l) {
  const double links = std::round(l.nvlink_GBps / 25.0);
  return links * (l.compute_capability >= 90 ? 20.6 : 20.0);
}

struct Search {
  bool inter;
  int gpus;
  double nvlink, path_to_nic;
  int nics;

  // Channels every link can carry at speed s: each takes s on every GPU's NVLink (the ring
  // visits each GPU once) and, across nodes, on the NIC (and PCIe link) it enters and leaves by.
  int capacity(double s) const {
    int n = kMaxRingChannels;
    if (gpus > 1) n = std::min(n, static_cast<int>(std::floor(nvlink / s + 1e-9)));
    if (inter) n = std::min(n, nics * static_cast<int>(std::floor(path_to_nic / s + 1e-9)));
    return n;
  }
};

}  // namespace

RingChannels nccl_ring_channels(const NcclNodeLinks& links, int gpus_per_node, int nodes) {
  if (gpus_per_node < 1 || nodes < 1) throw Error("nccl channels: a communicator needs at least one GPU on one node");
  const bool inter = nodes > 1;
  // One GPU alone: NCCL prices its "ring" at the local bandwidth (LOC_BW) and no link limits
  // it; it never moves data, so one channel stands for it.
  if (!inter && gpus_per_node == 1) return {1, 0, 1};
  const int cc = links.compute_capability;
  const double nvlink = nvlink_model_GBps(links);
  if (gpus_per_node > 1 && !(nvlink > 0)) throw Error("nccl channels: GPUs of one node need nvlink bandwidth");
  if (inter && !(links.nic_GBps > 0 && links.nics_per_node > 0)) throw Error("nccl channels: nodes need a network");
  const double path_to_nic = std::min(links.pcie_GBps, links.nic_GBps);
  const Search search{inter, gpus_per_node, nvlink, path_to_nic, std::min(links.nics_per_node, gpus_per_node)};
  const double max_bw = inter ? path_to_nic : nvlink;           // ncclTopoSearchInit: getMaxBw
  const double total_bw = std::max(links.pcie_GBps, nvlink);    // getTotalBw: max(PCIe, NVLink)
  const auto& s = speeds(inter, cc);
  std::size_t i = 0;
  while (i + 1 < s.size() && (s[i] > max_bw || s[i] > total_bw)) ++i;
  // Pass 1: keep the most channels x speed, going slower while the next speed is above 0.49 of
  // the best one found (ncclTopoCompareGraphs, the "Decrease bw" step).
  int best_n = 0;
  double best_s = 0;
  for (;;) {
    const int n = search.capacity(s[i]);
    if (n > 0 && n * s[i] > best_n * best_s) best_n = n, best_s = s[i];
    if (best_n == kMaxRingChannels || best_n * best_s >= total_bw) break;
    if (i + 1 < s.size() && (best_n == 0 || s[i + 1] / best_s > 0.49)) {
      ++i;
      continue;
    }
    break;
  }
  if (best_n == 0) throw Error("nccl channels: no ring fits the links");
  RingChannels out{best_n, best_s, best_n};
  int n = best_n;
  double bw = best_s;
  // ncclTopoDupChannels.
  if (bw >= 25.0 && !(cc > 80 && bw < 50.0 && n > 4)) {
    const int dup = std::min(2 * n, kMaxRingChannels);
    bw /= (dup + n - 1) / n;
    n = dup;
  }
  // Pass 2: faster speeds, one by one up the list, each kept when it carries at least the n
  // channels found and more channels x speed (it may carry more channels than n).
  std::size_t k = 0;
  while (k < s.size() && s[k] > bw) ++k;
  while (k-- > 0) {
    const int c = search.capacity(s[k]);
    if (c >= n && c * s[k] > n * bw) n = c, bw = s[k];
  }
  // ncclTopoPostset: "Duplication should be complete now", then sm90's extra doubling across
  // nodes ("4 compute channels per search channel to reach peak BW on <8 PPN").
  n = std::min(kMaxChannels, 2 * n);
  if (cc >= 90 && inter && bw > 45.0 && n < 16) n = 2 * n;
  out.channels = n;
  return out;
}

std::optional<NcclNodeLinks> nccl_gpu_links(const std::string& gpu) {
  // PCIe: NCCL's width x rate / 80 with rates 120 (16 GT/s) and 240 (32 GT/s) per lane.
  if (gpu == "a800-sxm4-80gb") return NcclNodeLinks{80, 0, 24.0, 0, 0};
  if (gpu == "h100-sxm" || gpu == "h200") return NcclNodeLinks{90, 0, 48.0, 0, 0};
  return std::nullopt;
}

}  // namespace dmuon
