#include "core/plan/ns_sharding.hpp"

#include <algorithm>
#include <set>

#include "core/error.hpp"

namespace dmuon {

std::int64_t ns_wide_rows(const MuonMatrix& matrix) { return std::min(matrix.rows, matrix.cols); }
std::int64_t ns_wide_columns(const MuonMatrix& matrix) { return std::max(matrix.rows, matrix.cols); }

bool ns_shardable(std::int64_t n, int k) {
  if (k < 1 || n < k) return false;
  const std::int64_t per = (n + k - 1) / k;
  return per * (k - 1) < n;
}

std::pair<std::int64_t, std::int64_t> ns_shard_columns(std::int64_t n, int k, int j) {
  if (k < 1 || j < 0 || j >= k) {
    throw Error("sharded Newton-Schulz: member " + std::to_string(j) + " of " + std::to_string(k) + " is out of range");
  }
  if (!ns_shardable(n, k)) {
    throw Error("sharded Newton-Schulz: " + std::to_string(n) + " columns cannot give each of " + std::to_string(k) +
                " members at least one");
  }
  const std::int64_t per = (n + k - 1) / k;
  return {per * j, std::min(n, per * (j + 1))};
}

std::vector<Region> ns_shard_regions(const Routing& routing, std::size_t matrix, std::int64_t begin, std::int64_t end) {
  const MuonMatrix& mm = routing.muon_matrices.at(matrix);
  const Region whole = matrix_region(routing, matrix);
  if (begin < 0 || end > ns_wide_columns(mm) || begin >= end) {
    throw Error("sharded Newton-Schulz: columns [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") of matrix '" + mm.name + "' (" + std::to_string(ns_wide_columns(mm)) + " columns)");
  }
  if (mm.rows > mm.cols) return {{whole.param, whole.offset + begin * mm.cols, (end - begin) * mm.cols}};
  std::vector<Region> out;
  out.reserve(static_cast<std::size_t>(mm.rows));
  for (std::int64_t r = 0; r < mm.rows; ++r) out.push_back({whole.param, whole.offset + r * mm.cols + begin, end - begin});
  return out;
}

std::vector<NsShardHolding> ns_shard_holdings(const Routing& routing, std::size_t matrix, int owner, int k) {
  const std::int64_t n = ns_wide_columns(routing.muon_matrices.at(matrix));
  std::vector<NsShardHolding> out;
  for (int j = 0; j < k; ++j) {
    const auto [begin, end] = ns_shard_columns(n, k, j);
    out.push_back({owner + j, begin, end, ns_shard_regions(routing, matrix, begin, end)});
  }
  return out;
}

double ns_shard_flops(NsKernel kernel, std::int64_t rows, std::int64_t cols, std::int64_t columns, int steps,
                      const std::vector<int>& restarts) {
  const double m = double(std::min(rows, cols)), n = double(std::max(rows, cols));
  const long mi = static_cast<long>(m);
  // ns_flops is S m^3 + c m^2 n for every kernel: c from two widths, then only the m^2 n part
  // shrinks to this member's columns.
  const double c = (ns_flops(kernel, mi, 2 * mi, steps, restarts) - ns_flops(kernel, mi, mi, steps, restarts)) / (m * m * m);
  return ns_flops(kernel, rows, cols, steps, restarts) - c * m * m * (n - double(columns));
}

NsShardComm ns_shard_comm(NsKernel kernel, std::int64_t rows, std::int64_t cols, int steps, const std::vector<int>& restarts) {
  const double m = double(std::min(rows, cols));
  NsShardComm out;
  out.matrix_all_reduces = kernel == NsKernel::gram ? 1 + static_cast<int>(restarts.size()) : steps;
  out.bytes_each = m * m * kNsAllReduceBytesPerElement;
  return out;
}

double ring_all_reduce_seconds(double bytes, int k, const NodeLink& link) {
  if (k <= 1) return 0;
  return 2.0 * (k - 1) / k * bytes / (link.bw_GBps * 1e9) + 2.0 * (k - 1) * link.latency_us * 1e-6;
}

double sharded_ns_seconds(const CostModel& cost, const NsConfig& ns, std::int64_t rows, std::int64_t cols, int k,
                          const NodeLink& link) {
  const NsKernel kernel = ns_kernel_of(ns);
  const double full = cost.ns_seconds(rows, cols, kernel, ns.compute_dtype, ns.steps, ns.restarts, 1);
  if (k <= 1) return full;
  const std::int64_t n = std::max(rows, cols);
  const std::int64_t widest = (n + k - 1) / k;  // the slowest member
  const double share = ns_shard_flops(kernel, rows, cols, widest, ns.steps, ns.restarts) /
                       ns_flops(kernel, rows, cols, ns.steps, ns.restarts);
  const NsShardComm comm = ns_shard_comm(kernel, rows, cols, ns.steps, ns.restarts);
  return full * share + comm.matrix_all_reduces * ring_all_reduce_seconds(comm.bytes_each, k, link) +
         ring_all_reduce_seconds(8, k, link);
}

void refuse_sharded_ns(const Plan& plan, const std::string& executor) {
  for (std::size_t rank = 0; rank < plan.ranks.size(); ++rank) {
    const auto& ops = plan.ranks[rank];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!is_sharded_ns(ops[i])) continue;
      throw Error("rank " + std::to_string(rank) + " op " + std::to_string(i) + " (newton_schulz '" + ops[i].label +
                  "', collective " + std::to_string(ops[i].collective) + "): sharded Newton-Schulz is not supported by " +
                  executor + "; plan without it (scenario planner.sharded_ns: false)");
    }
  }
}

int sharded_ns_calls(const Plan& plan) {
  std::set<std::int64_t> calls;
  for (const auto& ops : plan.ranks) {
    for (const Op& op : ops) {
      if (is_sharded_ns(op)) calls.insert(op.collective);
    }
  }
  return static_cast<int>(calls.size());
}

}  // namespace dmuon
