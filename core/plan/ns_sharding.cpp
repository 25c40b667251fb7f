#include "core/plan/ns_sharding.hpp"

#include <algorithm>
#include <set>

#include "core/cost/ns_flops.hpp"
#include "core/error.hpp"

namespace dmuon {

std::int64_t ns_wide_rows(const MuonMatrix& matrix) { return std::min(matrix.rows, matrix.cols); }
std::int64_t ns_wide_columns(const MuonMatrix& matrix) { return std::max(matrix.rows, matrix.cols); }
bool ns_shard_by_stored_rows(const MuonMatrix& matrix) { return matrix.rows >= matrix.cols; }

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
  if (ns_shard_by_stored_rows(mm)) return {{whole.param, whole.offset + begin * mm.cols, (end - begin) * mm.cols}};
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

std::pair<std::int64_t, std::int64_t> ns_product_columns(std::int64_t m, int k, int i) {
  return ns_shard_columns(m, k, i);
}

bool holds_product_block(const Op& op, std::int64_t m, int k, int position) {
  return ns_shardable(m, k) && position >= 0 && position < k &&
         std::make_pair(op.ns_product_begin, op.ns_product_end) == ns_product_columns(m, k, position);
}

int ns_split_gathers(NsKernel kernel, int steps, const std::vector<int>& restarts) {
  if (kernel != NsKernel::gram) return steps;
  auto restart_at = [&](int t) { return t != 0 && std::find(restarts.begin(), restarts.end(), t) != restarts.end(); };
  int gathers = 1;  // Q for the result
  for (int t = 0; t < steps; ++t) {
    if (restart_at(t)) gathers += 1;                     // Q for X_j = Q X_j
    gathers += 1;                                        // Z
    if (t < steps - 1 && !restart_at(t + 1)) gathers += 1;  // R
  }
  return gathers;
}

double ns_shard_flops(NsKernel kernel, std::int64_t rows, std::int64_t cols, std::int64_t columns, int steps,
                      const std::vector<int>& restarts, std::int64_t product_columns) {
  const double m = double(std::min(rows, cols)), n = double(std::max(rows, cols));
  const long mi = static_cast<long>(m);
  // ns_flops is S m^3 + c m^2 n for every kernel: c from two widths, then only the m^2 n part
  // shrinks to this member's columns.
  const double c = (ns_flops(kernel, mi, 2 * mi, steps, restarts) - ns_flops(kernel, mi, mi, steps, restarts)) / (m * m * m);
  const double whole_squares = ns_flops(kernel, rows, cols, steps, restarts) - c * m * m * n;
  // A split member's m x m part: its columns' share of the whole call's, in ns_flops' convention
  // (so the members' flops add up to the call's; the time share is ns_shard_share's).
  const double squares = product_columns > 0 ? whole_squares * double(product_columns) / m : whole_squares;
  return squares + c * m * m * double(columns);
}

double ns_shard_share(NsKernel kernel, std::int64_t rows, std::int64_t cols, std::int64_t columns, int steps,
                      const std::vector<int>& restarts, std::int64_t product_columns) {
  const double m = double(std::min(rows, cols)), n = double(std::max(rows, cols));
  const NsProductCounts p = ns_product_counts(kernel, steps, restarts);
  const double squares = product_columns > 0 ? double(product_columns) : m;
  const double member = p.square * squares + (p.gram + p.rect) * double(columns);
  const double whole = p.square * m + (p.gram + p.rect) * n;
  return member / whole;
}

NsShardComm ns_shard_comm(NsKernel kernel, std::int64_t rows, std::int64_t cols, int steps, const std::vector<int>& restarts,
                          int split_members) {
  const double m = double(std::min(rows, cols));
  NsShardComm out;
  out.matrix_all_reduces = kernel == NsKernel::gram ? 1 + static_cast<int>(restarts.size()) : steps;
  out.bytes_each = m * m * kNsAllReduceBytesPerElement;
  if (split_members > 1) {
    const std::int64_t w = (static_cast<std::int64_t>(m) + split_members - 1) / split_members;
    out.product_all_gathers = ns_split_gathers(kernel, steps, restarts);
    out.gather_bytes_each = double(split_members) * double(w) * m * kNsGatherBytesPerElement;
  }
  return out;
}

double ring_all_reduce_seconds(double bytes, int k, const NodeLink& link) {
  if (k <= 1) return 0;
  return 2.0 * (k - 1) / k * bytes / (link.bw_GBps * 1e9) + 2.0 * (k - 1) * link.latency_us * 1e-6;
}

double ring_all_gather_seconds(double bytes, int k, const NodeLink& link) {
  if (k <= 1) return 0;
  return double(k - 1) / k * bytes / (link.bw_GBps * 1e9) + (k - 1) * link.latency_us * 1e-6;
}

double sharded_ns_compute_seconds(const CostModel& cost, const NsConfig& ns, std::int64_t rows, std::int64_t cols, int k,
                                  bool split) {
  const NsKernel kernel = ns_kernel_of(ns);
  const double full = cost.ns_seconds(rows, cols, kernel, ns.compute_dtype, ns.steps, ns.restarts, 1);
  if (k <= 1) return full;
  const std::int64_t m = std::min(rows, cols), n = std::max(rows, cols);
  const std::int64_t widest = (n + k - 1) / k;  // the slowest member
  const std::int64_t product_columns = split ? (m + k - 1) / k : 0;
  return full * ns_shard_share(kernel, rows, cols, widest, ns.steps, ns.restarts, product_columns);
}

double sharded_ns_seconds(const CostModel& cost, const NsConfig& ns, std::int64_t rows, std::int64_t cols, int k,
                          const NodeLink& link, bool split) {
  const double compute = sharded_ns_compute_seconds(cost, ns, rows, cols, k, split);
  if (k <= 1) return compute;
  const NsShardComm comm = ns_shard_comm(ns_kernel_of(ns), rows, cols, ns.steps, ns.restarts, split ? k : 1);
  // The in-call collectives: the calibration's curve for k GPUs of one node where it has one (as
  // the simulator prices them, step overhead included), else the ring over the node's link.
  const auto measured = [&](OpKind kind, double bytes, double (*ring)(double, int, const NodeLink&)) {
    const std::optional<double> curve = cost.collective_seconds(kind, k, 1, bytes);
    return curve ? *curve + cost.collective_step_overhead_s() : ring(bytes, k, link);
  };
  return compute + comm.matrix_all_reduces * measured(OpKind::all_reduce, comm.bytes_each, ring_all_reduce_seconds) +
         comm.product_all_gathers * measured(OpKind::all_gather, comm.gather_bytes_each, ring_all_gather_seconds) +
         measured(OpKind::all_reduce, 8, ring_all_reduce_seconds);
}

NsShardChoice best_sharded_ns(const CostModel& cost, const NsConfig& ns, std::int64_t rows, std::int64_t cols, int k,
                              const NodeLink& link, ProductSplit rule) {
  const bool can_split = rule != ProductSplit::never && k > 1 && ns_shardable(std::min(rows, cols), k);
  const auto form = [&](bool split) {
    return NsShardChoice{sharded_ns_seconds(cost, ns, rows, cols, k, link, split),
                         sharded_ns_compute_seconds(cost, ns, rows, cols, k, split), split};
  };
  if (can_split && rule == ProductSplit::always) return form(true);
  const NsShardChoice whole = form(false);
  if (!can_split) return whole;
  const NsShardChoice split = form(true);
  return split.seconds < whole.seconds ? split : whole;
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

namespace {

int distinct_calls(const Plan& plan, bool (*counted)(const Op&)) {
  std::set<std::int64_t> calls;
  for (const auto& ops : plan.ranks) {
    for (const Op& op : ops) {
      if (counted(op)) calls.insert(op.collective);
    }
  }
  return static_cast<int>(calls.size());
}

}  // namespace

int sharded_ns_calls(const Plan& plan) { return distinct_calls(plan, is_sharded_ns); }
int split_ns_calls(const Plan& plan) { return distinct_calls(plan, splits_ns_products); }

}  // namespace dmuon
