#include "core/cost/plan_cost.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "core/cost/grouped_calls.hpp"
#include "core/error.hpp"
#include "core/plan/region_runs.hpp"
#include "core/cost/ns_flops.hpp"
#include "core/plan/ns_sharding.hpp"

namespace dmuon {
namespace {

// Same-shape groups of an NS op's matrices (a builder emits one shape per op; this keeps the
// cost right for any Plan).
std::map<std::pair<long, long>, int> shapes_of(const Op& op, const Routing& routing) {
  std::map<std::pair<long, long>, int> out;
  for (std::size_t m : op.matrices) {
    const MuonMatrix& mm = routing.muon_matrices.at(m);
    ++out[{mm.rows, mm.cols}];
  }
  return out;
}

double elementwise_bytes(const Op& op) {
  const std::int64_t n = region_elements(op.regions);
  switch (op.kind) {
    case OpKind::momentum: return CostModel::momentum_bytes(n);
    case OpKind::muon_update: return CostModel::muon_update_bytes(n);
    case OpKind::adamw: return CostModel::adamw_bytes(n);
    default: return 0;
  }
}

// Arithmetic per element of the fused elementwise passes (a multiply-add counts 2): momentum
// lerp + nesterov lerp; decay and scaled add; AdamW's two moment updates, sqrt, divide, decay.
double elementwise_flops(const Op& op) {
  const double n = double(region_elements(op.regions));
  switch (op.kind) {
    case OpKind::momentum: return 4 * n;
    case OpKind::muon_update: return 3 * n;
    case OpKind::adamw: return 12 * n;
    default: return 0;
  }
}

}  // namespace

double collective_payload_bytes(const Op& op, int rank, int bytes_per_element) {
  std::int64_t n = 0;
  switch (op.kind) {
    case OpKind::broadcast:
    case OpKind::reduce:
    case OpKind::all_reduce: n = region_elements(op.regions); break;
    case OpKind::all_gather:
    case OpKind::reduce_scatter: n = region_elements(op.parts); break;
    case OpKind::all_to_all:
      for (const Transfer& t : op.transfers) {
        if (t.src == rank) n += t.from.count;
      }
      break;
    default: break;
  }
  return double(n) * bytes_per_element;
}

OpKind executed_collective_kind(const Op& op) {
  return op.kind == OpKind::broadcast && op.via_all_reduce ? OpKind::all_reduce : op.kind;
}

int nccl_calls(const Op& op) {
  const OpKind kind = executed_collective_kind(op);
  if (packs_regions(op)) return 1;
  return issued_per_region(kind) ? std::max<int>(1, static_cast<int>(op.regions.size())) : 1;
}

std::int64_t packed_copy_elements(const Op& op) {
  return packs_regions(op) ? 2 * region_elements(op.regions) : 0;
}

namespace {

// Every region an elementwise op names lies inside its parameter: a count from a wrong region
// would price work that does not exist.
void check_regions(const Op& op, const ModelSpec& model, std::size_t rank) {
  for (const Region& r : op.regions) {
    if (r.param >= model.params.size() || r.offset < 0 || r.count < 0 ||
        r.offset + r.count > model.params[r.param].numel()) {
      throw Error("plan cost: rank " + std::to_string(rank) + " op '" + op.label + "' names a region outside its parameter");
    }
  }
}

// The m x m product columns a sharded member computes (0: every product whole).
std::int64_t product_columns(const Op& op) {
  return splits_ns_products(op) ? op.ns_product_end - op.ns_product_begin : 0;
}

}  // namespace

void annotate_plan(Plan& plan, const ModelSpec& model, const Routing& routing, const OptimizerConfig& optimizer) {
  const NsConfig& ns = optimizer.muon.ns;
  const NsKernel kernel = ns_kernel_of(ns);
  for (std::size_t r = 0; r < plan.ranks.size(); ++r) {
    for (Op& op : plan.ranks[r]) {
      if (is_collective(op.kind)) {
        op.payload_bytes = collective_payload_bytes(op, static_cast<int>(r), plan.bytes_per_element);
        continue;
      }
      if (is_sharded_ns(op)) {  // this member's share; payload: its all-reduces
        const MuonMatrix& mm = routing.muon_matrices.at(op.matrices.at(0));
        const std::int64_t columns = op.ns_column_end - op.ns_column_begin;
        op.flops = ns_shard_flops(kernel, mm.rows, mm.cols, columns, ns.steps, ns.restarts, product_columns(op));
        op.memory_bytes = 2.0 * 2.0 * double(ns_wide_rows(mm)) * double(columns);
        const int members = static_cast<int>(plan.groups.at(static_cast<std::size_t>(op.group)).ranks.size());
        const NsShardComm comm =
            ns_shard_comm(kernel, mm.rows, mm.cols, ns.steps, ns.restarts, splits_ns_products(op) ? members : 1);
        op.payload_bytes = comm.matrix_all_reduces * comm.bytes_each +
                           comm.product_all_gathers * comm.gather_bytes_each + 8;
        continue;
      }
      if (op.kind == OpKind::newton_schulz) {
        op.flops = 0;
        op.memory_bytes = 0;
        for (const auto& [shape, count] : shapes_of(op, routing)) {
          op.flops += count * ns_flops(kernel, shape.first, shape.second, ns.steps, ns.restarts);
          // Reads the 16-bit input and writes the 16-bit output once; intermediates are m x m
          // or m x n per iteration and live in the workspace (counted in flops, not here).
          op.memory_bytes += count * 2.0 * 2.0 * double(shape.first) * double(shape.second);
        }
        continue;
      }
      check_regions(op, model, r);
      op.flops = elementwise_flops(op);
      op.memory_bytes = elementwise_bytes(op);
    }
  }
}

NsTime compute_op_time(const Op& op, const Routing& routing, const OptimizerConfig& optimizer, const CostModel& cost) {
  if (is_collective(op.kind)) {
    throw Error("compute_op_seconds: op '" + op.label + "' is a collective (" + std::string(to_string(op.kind)) + ")");
  }
  if (op.kind == OpKind::newton_schulz) {
    const NsConfig& ns = optimizer.muon.ns;
    const auto rank = [](std::string_view s) { return s == "measured" ? 2 : s == "interpolated" ? 1 : 0; };
    NsTime total{0, "measured"};
    for (const auto& [shape, count] : shapes_of(op, routing)) {
      const NsTime t = cost.ns_time(shape.first, shape.second, ns_kernel_of(ns), ns.compute_dtype, ns.steps, ns.restarts, count);
      total.seconds += t.seconds;
      if (rank(t.source) < rank(total.source)) total.source = t.source;
    }
    // A sharded call's member: the whole call's time, for its share of the work (ns_shard_share;
    // its all-reduces and all-gathers are priced as collectives by whoever executes the Plan).
    if (is_sharded_ns(op)) {
      const MuonMatrix& mm = routing.muon_matrices.at(op.matrices.at(0));
      total.seconds *= ns_shard_share(ns_kernel_of(ns), mm.rows, mm.cols, op.ns_column_end - op.ns_column_begin, ns.steps,
                                      ns.restarts, product_columns(op));
    }
    return total;
  }
  const ElementwiseKind kind = op.kind == OpKind::momentum      ? ElementwiseKind::momentum
                               : op.kind == OpKind::muon_update ? ElementwiseKind::muon_update
                                                                : ElementwiseKind::adamw;
  return cost.elementwise_time(elementwise_bytes(op), kind);
}

bool fused_launch(const Op& previous, const Op& next) {
  return previous.kind == OpKind::adamw && next.kind == OpKind::adamw && previous.stream == next.stream &&
         previous.phase == next.phase;
}

int adamw_tensors(const Op& op) {
  return static_cast<int>(std::count_if(op.regions.begin(), op.regions.end(), [](const Region& r) { return r.count > 0; }));
}

std::vector<NsTime> rank_compute_times(const std::vector<Op>& ops, const Routing& routing,
                                       const OptimizerConfig& optimizer, const CostModel& cost) {
  std::vector<NsTime> out(ops.size(), NsTime{0, "datasheet"});
  for (std::size_t i = 0; i < ops.size();) {
    const Op& op = ops[i];
    if (is_collective(op.kind)) {
      ++i;
      continue;
    }
    if (op.kind != OpKind::adamw) {
      out[i] = compute_op_time(op, routing, optimizer, cost);
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    while (end < ops.size() && fused_launch(ops[end - 1], ops[end])) ++end;
    double bytes = 0;
    for (std::size_t k = i; k < end; ++k) bytes += elementwise_bytes(ops[k]);
    const NsTime whole = cost.elementwise_time(bytes, ElementwiseKind::adamw);
    const double seconds = whole.seconds * cost.adamw_fused_vs_curve();
    for (std::size_t k = i; k < end; ++k) {
      const double share = bytes > 0 ? elementwise_bytes(ops[k]) / bytes : 1.0 / double(end - i);
      out[k] = NsTime{seconds * share, whole.source};
    }
    i = end;
  }
  return out;
}

double compute_op_seconds(const Op& op, const Routing& routing, const OptimizerConfig& optimizer,
                          const CostModel& cost) {
  return compute_op_time(op, routing, optimizer, cost).seconds;
}

double collective_payload_bytes(const Plan& plan, int rank, const Phase* phase) {
  double bytes = 0;
  for (const Op& op : plan.ranks.at(static_cast<std::size_t>(rank))) {
    if (!is_collective(op.kind) || (phase && op.phase != *phase)) continue;
    bytes += collective_payload_bytes(op, rank, plan.bytes_per_element);
  }
  return bytes;
}

}  // namespace dmuon
