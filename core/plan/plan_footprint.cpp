#include "core/plan/plan_footprint.hpp"

#include <algorithm>
#include <initializer_list>

#include "core/plan/ns_sharding.hpp"

namespace dmuon {
namespace {

std::size_t idx(int i) { return static_cast<std::size_t>(i); }

}  // namespace

void PlanFootprint::touch(std::size_t param, int kind, std::int64_t offset, std::int64_t count) {
  if (count <= 0) return;
  if (param >= ranges.size()) ranges.resize(param + 1, std::vector<ElementRange>(idx(kFootprintKinds)));
  ElementRange& r = ranges[param][idx(kind)];
  if (r.empty()) {
    r = {offset, offset + count};
  } else {
    r.lo = std::min(r.lo, offset);
    r.hi = std::max(r.hi, offset + count);
  }
}

PlanFootprint plan_footprint(const Plan& plan, int rank, const ModelSpec& model, const Routing& routing) {
  PlanFootprint f;
  f.ranges.assign(model.params.size(), std::vector<ElementRange>(idx(kFootprintKinds)));
  auto touch = [&](const Region& r, std::initializer_list<int> kinds) {
    for (int k : kinds) f.touch(r.param, k, r.offset, r.count);
  };
  constexpr auto K = [](BufferKind b) { return static_cast<int>(b); };
  for (const Op& op : plan.ranks.at(idx(rank))) {
    switch (op.kind) {
      case OpKind::momentum:
        for (const Region& r : op.regions) touch(r, {K(BufferKind::grad), K(BufferKind::momentum), K(BufferKind::ns_input)});
        break;
      case OpKind::newton_schulz:
        if (is_sharded_ns(op) && op.matrices.size() == 1) {  // this member's columns only (ns_sharding.hpp)
          for (const Region& r : ns_shard_regions(routing, op.matrices.front(), op.ns_column_begin, op.ns_column_end)) {
            touch(r, {K(BufferKind::ns_input), K(BufferKind::ns_output)});
          }
          break;
        }
        for (std::size_t m : op.matrices) {
          const Region r = matrix_region(routing, m);
          touch(r, {K(BufferKind::ns_input), K(BufferKind::ns_output)});
          if (std::find(f.ns_order.begin(), f.ns_order.end(), r.param) == f.ns_order.end()) f.ns_order.push_back(r.param);
        }
        break;
      case OpKind::muon_update:
        for (const Region& r : op.regions) touch(r, {K(BufferKind::param), K(BufferKind::ns_output), kMasterKind});
        break;
      case OpKind::adamw:
        for (const Region& r : op.regions) {
          touch(r, {K(BufferKind::param), K(BufferKind::grad), K(BufferKind::adam_m), K(BufferKind::adam_v), kMasterKind});
        }
        break;
      case OpKind::broadcast:
      case OpKind::reduce:
      case OpKind::all_reduce:
        for (const Region& r : op.regions) touch(r, {K(op.buffer)});
        break;
      case OpKind::all_gather:
      case OpKind::reduce_scatter:
        for (const Region& r : op.parts) touch(r, {K(op.buffer)});
        break;
      case OpKind::all_to_all:
        for (const Transfer& t : op.transfers) {
          if (t.src == rank) touch(t.from, {K(op.buffer)});
          if (t.dst == rank) touch(t.to, {K(op.buffer)});
        }
        break;
    }
  }
  return f;
}

}  // namespace dmuon
