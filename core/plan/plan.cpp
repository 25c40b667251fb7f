#include "core/plan/plan.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/model/model_spec.hpp"
#include "core/model/routing.hpp"

namespace dmuon {

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::momentum: return "momentum";
    case OpKind::newton_schulz: return "newton_schulz";
    case OpKind::muon_update: return "muon_update";
    case OpKind::adamw: return "adamw";
    case OpKind::broadcast: return "broadcast";
    case OpKind::reduce: return "reduce";
    case OpKind::all_reduce: return "all_reduce";
    case OpKind::all_gather: return "all_gather";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::all_to_all: return "all_to_all";
  }
  return "?";
}

std::string_view to_string(StreamKind s) { return s == StreamKind::compute ? "compute" : "comm"; }

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::optimizer: return "optimizer";
  }
  return "?";
}

std::string_view to_string(BufferKind b) {
  switch (b) {
    case BufferKind::param: return "param";
    case BufferKind::grad: return "grad";
    case BufferKind::momentum: return "momentum";
    case BufferKind::ns_input: return "ns_input";
    case BufferKind::ns_output: return "ns_output";
    case BufferKind::adam_m: return "adam_m";
    case BufferKind::adam_v: return "adam_v";
  }
  return "?";
}

bool is_collective(OpKind k) {
  return k == OpKind::broadcast || k == OpKind::reduce || k == OpKind::all_reduce || k == OpKind::all_gather ||
         k == OpKind::reduce_scatter || k == OpKind::all_to_all;
}

bool is_sharded_ns(const Op& op) { return op.kind == OpKind::newton_schulz && op.group >= 0; }

bool splits_ns_products(const Op& op) { return is_sharded_ns(op) && op.ns_product_end > op.ns_product_begin; }

bool synchronizes(const Op& op) { return is_collective(op.kind) || is_sharded_ns(op); }

std::size_t Plan::op_count() const {
  std::size_t n = 0;
  for (const auto& ops : ranks) n += ops.size();
  return n;
}

std::int64_t region_elements(const std::vector<Region>& regions) {
  std::int64_t n = 0;
  for (const Region& r : regions) n += r.count;
  return n;
}

Region matrix_region(const Routing& routing, std::size_t matrix) {
  const MuonMatrix& m = routing.muon_matrices.at(matrix);
  const std::int64_t count = m.rows * m.cols;
  const std::int64_t offset = m.expert >= 0 ? m.expert * count : 0;
  return {m.param, offset, count};
}

Region shard_region(const ModelSpec& model, std::size_t param, int shards, int s) {
  const ParamSpec& p = model.params.at(param);
  const std::int64_t rows = p.shape[0];
  const std::int64_t row_elems = p.numel() / rows;
  const std::int64_t chunk = (rows + shards - 1) / shards;
  const std::int64_t first = std::min<std::int64_t>(rows, s * chunk);
  const std::int64_t last = std::min<std::int64_t>(rows, first + chunk);
  return {param, first * row_elems, (last - first) * row_elems};
}

}  // namespace dmuon
