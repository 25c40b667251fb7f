// A collective's parallel task restated over a few proxy hosts, so that SimGrid's ptask_L07 sees
// the same max-min system without the dense n x n byte matrix of its n GPUs.
//
// What the task of (src, dst, bytes) pairs over n hosts is to the L07 model (SimGrid 3.32,
// ptask_L07.cpp): one max-min variable; for each link of each pair's route an element of the
// link's constraint, of weight the sum of the bytes of the pairs crossing it (summed in the
// matrix's row-major order); an element of weight 0 in each host's CPU constraint, which no solve
// reads (FairBottleneck counts and charges only positive weights); a latency phase of the longest
// route's latency L; then a bound on the variable of TCP-gamma / (2 G), G = max over pairs of
// route latency x bytes. The matrix is copied twice, scanned three times and every pair's route
// computed three times: at 1,024 hosts (8,192 GPUs) that was most of a run.
//
// The proxy form has the same links with the same weights, the same L and G: one pair per
// distinct link weight w, whose route is the links of that weight and whose bytes are w (latency
// 0), and, when L > 0, one pair without links whose latency is L and bytes G / L. Only the host
// CPU elements differ (the proxies' instead of the GPUs'), and they carry weight 0.
#pragma once
#include <tuple>
#include <vector>

#include "sim/topology.hpp"

namespace dmuon::sim {

struct ProxyPair {
  std::vector<int> links;  // Topology link indices; each link of the task is in exactly one pair
  double bytes = 0;
  double latency_s = 0;    // what the proxy route reports
};

// `pairs`: (src rank, dst rank, bytes) as the dense task gets them (a pair listed twice adds);
// `hosts`: the task's hosts in the order of its matrix rows. Bytes <= 0 pairs send nothing.
std::vector<ProxyPair> proxy_pairs(const std::vector<std::tuple<int, int, double>>& pairs, const std::vector<int>& hosts,
                                   const Topology& topo);

// Proxy hosts a task of `pair_count` ordered pairs needs: the least q with q (q - 1) >= pair_count.
int proxies_for(std::size_t pair_count);

}  // namespace dmuon::sim
