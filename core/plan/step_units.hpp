// The schedule facts every executor of a training step shares: which forward/backward compute
// unit (core/cost/forward_backward_cost.hpp) each forward/backward op of a Plan belongs to, the
// order a rank issues its step in with that compute between the collectives, and the weight
// GEMMs a compute stand-in runs per unit. Pure data; the NCCL executor's stand-in (kernels/)
// runs it, the simulator (sim/step_program) places the same units.
//
// Unit of an op: the lowest unit its parameters fall in. The forward needs the op before that
// unit's compute; the backward, which runs units in reverse, finishes its gradients last. A
// bucket's ops all belong to the lowest unit of any of its ops (the bucket travels as one
// launch). A collective's unit is decided over every member's op of it, so all ranks agree
// and order their collectives alike (as NCCL needs). An op that names no parameter: unit 0.
#pragma once
#include <cstdint>
#include <vector>

#include "core/cost/forward_backward_cost.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"

namespace dmuon {

// The units an op's parameters fall in: the lowest, and whether it is the only one.
struct OpUnitSpan {
  int lowest = -1;  // -1: the op names no parameter
  bool single = true;
};
OpUnitSpan op_unit_span(const Op& op, const Routing& routing, const ForwardBackwardCost& cost);

struct StepUnits {
  int units = 0;
  std::vector<std::vector<int>> unit_of_op;  // [rank][op]: its unit; -1 for optimizer-phase ops
};
StepUnits assign_step_units(const Plan& plan, const Routing& routing, const ForwardBackwardCost& cost);

// One rank's forward and backward in issue order:
//   forward, units ascending: the unit's forward ops (Plan order), then its forward compute,
//     which waits for them; a forward op that is not Op::run_ahead also waits for the forward
//     compute of unit u - 1 - prefetch_layers (FSDP2's prefetch gate);
//   backward, units descending: the unit's backward compute, then its backward ops, which
//     wait for it.
// The optimizer-phase ops follow in Plan order. Not in it: FSDP2's backward re-gathers
// (reshard_after_forward), which the Plan does not hold (the simulator adds them itself).
enum class StepItemKind { op, forward_compute, backward_compute };
struct StepItem {
  StepItemKind kind = StepItemKind::op;
  int index = 0;           // op: the rank's Plan op; compute: the unit
  std::vector<int> after;  // earlier items (indices into StepSchedule::items) it waits for
};
struct StepSchedule {
  int units = 0;
  std::vector<StepItem> items;
};
// Throws dmuon::Error naming the rank and ops when an op's Plan dependency would come after it.
StepSchedule step_schedule(const Plan& plan, int rank, const StepUnits& units, std::int64_t prefetch_layers);

// A GEMM of the compute stand-in: `count` products D (m x n) = A (m x k) B (k x n), bf16 in
// and out, fp32 accumulation.
struct StandinGemm {
  std::int64_t m = 0, n = 0, k = 0, count = 1;
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(count); }
};
// Forward: each UnitGemm (tokens, in, out) as m = tokens, k = in, n = out. Backward: two per
// forward GEMM, dX = dY W (m = tokens, k = out, n = in) and dW = X^T dY (m = in, k = tokens,
// n = out): twice the forward FLOPs, as forward_backward_cost counts them. Tokens are rounded
// to whole ones (an expert's share; exact when the experts divide tokens x top_k). Not in it:
// attention's s^2 products, norms, activations, the loss (elementwise work).
std::vector<StandinGemm> standin_gemms(const ComputeUnit& unit, Phase phase);

}  // namespace dmuon
