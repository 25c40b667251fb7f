#include "core/cost/executor_memory.hpp"

#include <cmath>

#include "core/plan/plan_footprint.hpp"

namespace dmuon {
namespace {

// Element size of each footprint kind in the executor (kernels/exec/buffers.hpp BufferTypes:
// param/grad bf16, momentum and AdamW moments fp32, NS input/output bf16 or fp16, both 2 bytes
// (the executor refuses fp32 NS); the master copy fp32), indexed like core/plan/plan_footprint.
constexpr double kElementBytes[kFootprintKinds] = {2, 2, 4, 2, 2, 4, 4, 4};
static_assert(static_cast<int>(BufferKind::param) == 0 && static_cast<int>(BufferKind::grad) == 1 &&
                  static_cast<int>(BufferKind::momentum) == 2 && static_cast<int>(BufferKind::ns_input) == 3 &&
                  static_cast<int>(BufferKind::ns_output) == 4 && static_cast<int>(BufferKind::adam_m) == 5 &&
                  static_cast<int>(BufferKind::adam_v) == 6 && kMasterKind == 7,
              "kElementBytes follows BufferKind's order, then the master copy");
constexpr int K(BufferKind b) { return static_cast<int>(b); }

}  // namespace

MemoryBreakdown executor_memory_of_rank(const Plan& plan, int rank, const ModelSpec& model, const Routing& routing) {
  double bytes[kFootprintKinds] = {};
  for (const auto& per_kind : plan_footprint(plan, rank, model, routing).ranges) {
    for (int k = 0; k < kFootprintKinds; ++k) {
      const ElementRange& s = per_kind[static_cast<std::size_t>(k)];
      if (s.empty()) continue;
      bytes[k] += std::ceil(double(s.hi - s.lo) * kElementBytes[k] / kExecutorAlignBytes) * kExecutorAlignBytes;
    }
  }
  MemoryBreakdown m;
  m.master_bytes = bytes[kMasterKind];
  m.grad_bytes = bytes[K(BufferKind::grad)];
  m.state_bytes = bytes[K(BufferKind::momentum)] + bytes[K(BufferKind::adam_m)] + bytes[K(BufferKind::adam_v)];
  m.transient_bytes = bytes[K(BufferKind::param)] + bytes[K(BufferKind::ns_input)] + bytes[K(BufferKind::ns_output)];
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
