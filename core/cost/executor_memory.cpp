#include "core/cost/executor_memory.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace dmuon {
namespace {

// The executor's buffers: the Plan's kinds plus the fp32 master copy (kernels/exec/buffers.hpp
// kMasterKind), each with its element size there (BufferTypes: param/grad bf16, momentum and
// AdamW moments fp32, NS input/output bf16 or fp16, both 2 bytes; the executor refuses fp32 NS).
enum Kind { kParam, kGrad, kMomentum, kNsInput, kNsOutput, kAdamM, kAdamV, kMaster, kKinds };
constexpr double kElementBytes[kKinds] = {2, 2, 4, 2, 2, 4, 4, 4};

int kind_of(BufferKind b) {
  switch (b) {
    case BufferKind::param: return kParam;
    case BufferKind::grad: return kGrad;
    case BufferKind::momentum: return kMomentum;
    case BufferKind::ns_input: return kNsInput;
    case BufferKind::ns_output: return kNsOutput;
    case BufferKind::adam_m: return kAdamM;
    case BufferKind::adam_v: return kAdamV;
  }
  return kParam;
}

struct Span {
  std::int64_t lo = 0, hi = 0;
  bool empty() const { return hi <= lo; }
};

// Which ranges of which (parameter, kind) the rank's ops touch: the same op -> kinds table as
// kernels/exec/buffers.cpp plan_footprint, which core cannot include (kernels depend on core).
std::vector<std::vector<Span>> footprint(const Plan& plan, int rank, const ModelSpec& model, const Routing& routing) {
  std::vector<std::vector<Span>> spans(model.params.size(), std::vector<Span>(kKinds));
  auto touch = [&](const Region& r, std::initializer_list<int> kinds) {
    if (r.count <= 0) return;
    for (int k : kinds) {
      Span& s = spans.at(r.param)[static_cast<std::size_t>(k)];
      if (s.empty()) {
        s = {r.offset, r.offset + r.count};
      } else {
        s.lo = std::min(s.lo, r.offset);
        s.hi = std::max(s.hi, r.offset + r.count);
      }
    }
  };
  for (const Op& op : plan.ranks.at(static_cast<std::size_t>(rank))) {
    switch (op.kind) {
      case OpKind::momentum:
        for (const Region& r : op.regions) touch(r, {kGrad, kMomentum, kNsInput});
        break;
      case OpKind::newton_schulz:
        for (std::size_t m : op.matrices) touch(matrix_region(routing, m), {kNsInput, kNsOutput});
        break;
      case OpKind::muon_update:
        for (const Region& r : op.regions) touch(r, {kParam, kNsOutput, kMaster});
        break;
      case OpKind::adamw:
        for (const Region& r : op.regions) touch(r, {kParam, kGrad, kAdamM, kAdamV, kMaster});
        break;
      case OpKind::broadcast:
      case OpKind::reduce:
      case OpKind::all_reduce:
        for (const Region& r : op.regions) touch(r, {kind_of(op.buffer)});
        break;
      case OpKind::all_gather:
      case OpKind::reduce_scatter:
        for (const Region& r : op.parts) touch(r, {kind_of(op.buffer)});
        break;
      case OpKind::all_to_all:
        for (const Transfer& t : op.transfers) {
          if (t.src == rank) touch(t.from, {kind_of(op.buffer)});
          if (t.dst == rank) touch(t.to, {kind_of(op.buffer)});
        }
        break;
    }
  }
  return spans;
}

}  // namespace

MemoryBreakdown executor_memory_of_rank(const Plan& plan, int rank, const ModelSpec& model, const Routing& routing) {
  double bytes[kKinds] = {};
  for (const auto& per_kind : footprint(plan, rank, model, routing)) {
    for (int k = 0; k < kKinds; ++k) {
      const Span& s = per_kind[static_cast<std::size_t>(k)];
      if (s.empty()) continue;
      bytes[k] += std::ceil(double(s.hi - s.lo) * kElementBytes[k] / kExecutorAlignBytes) * kExecutorAlignBytes;
    }
  }
  MemoryBreakdown m;
  m.master_bytes = bytes[kMaster];
  m.grad_bytes = bytes[kGrad];
  m.state_bytes = bytes[kMomentum] + bytes[kAdamM] + bytes[kAdamV];
  m.transient_bytes = bytes[kParam] + bytes[kNsInput] + bytes[kNsOutput];
  return m;
}

MemoryBreakdown executor_memory_per_gpu(const Plan& plan, const ModelSpec& model, const Routing& routing) {
  MemoryBreakdown most;
  for (std::size_t r = 0; r < plan.ranks.size(); ++r) {
    const MemoryBreakdown m = executor_memory_of_rank(plan, static_cast<int>(r), model, routing);
    if (m.total_bytes() > most.total_bytes()) most = m;
  }
  return most;
}

}  // namespace dmuon
