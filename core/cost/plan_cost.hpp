// What each op of a Plan costs: the work a compute op does (flops, device-memory bytes) and the
// bytes a collective carries, and the seconds a compute op takes under a CostModel. Executors
// that predict (the simulator) and executors that measure (the NCCL bench) read the same numbers.
#pragma once
#include "core/cost/calibration.hpp"
#include "core/model/model_spec.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"

namespace dmuon {

// Fills op.flops and op.memory_bytes of every compute op and op.payload_bytes of every
// collective, on every rank. payload_bytes is the size nccl-tests reports for the call:
// broadcast/reduce/all_reduce: the buffer; all_gather: the gathered output; reduce_scatter: the
// input of all parts; all_to_all: the bytes this rank sends.
void annotate_plan(Plan& plan, const ModelSpec& model, const Routing& routing, const OptimizerConfig& optimizer);

// Seconds one compute op takes on one GPU: Newton-Schulz through CostModel::ns_time (one batched
// call per shape among op.matrices), elementwise ops through CostModel::elementwise_seconds with
// the bytes annotate_plan counts. Throws dmuon::Error for a collective.
double compute_op_seconds(const Op& op, const Routing& routing, const OptimizerConfig& optimizer,
                          const CostModel& cost);
// The same with where the time came from (CostModel's source strings); an op of several
// Newton-Schulz shapes takes the least measured of its shapes' sources (measured >
// interpolated > roofline), so it counts as measured only when every shape was.
NsTime compute_op_time(const Op& op, const Routing& routing, const OptimizerConfig& optimizer, const CostModel& cost);

// Whether the NCCL executor runs `next`, enqueued right after `previous`, inside previous's
// launch: consecutive AdamW ops on one stream and in one phase are one multi-tensor launch
// (kernels/exec/nccl_executor.cpp enqueue, ExecutorOptions::fuse_adamw, on by default).
bool fused_launch(const Op& previous, const Op& next);

// Tensors an AdamW op adds to its fused launch's list: its non-empty regions
// (kernels/exec/compute.cpp launch_adamw).
int adamw_tensors(const Op& op);

// Every compute op of one rank's list priced as the NCCL executor launches them: a run of ops
// that fused_launch joins is ONE multi-tensor launch, priced at the bytes of the whole run times
// the calibration's adamw_fused_vs_curve and shared among its ops by bytes; every other compute
// op alone (compute_op_time). Collectives get {0, "datasheet"}.
// Pricing each small AdamW op as its own launch overstated a 0.5B model's AdamW by 31%.
std::vector<NsTime> rank_compute_times(const std::vector<Op>& ops, const Routing& routing,
                                       const OptimizerConfig& optimizer, const CostModel& cost);

// The payload of one collective op on `rank` (the convention of annotate_plan); 0 for compute.
double collective_payload_bytes(const Op& op, int rank, int bytes_per_element);

// The collective NCCL runs for a Plan collective: a broadcast run as an all-reduce
// (Op::via_all_reduce) is that all-reduce. The simulator prices it so, and so does the
// calibration's in-step overhead (core/cost/step_overhead.hpp).
OpKind executed_collective_kind(const Op& op);

// NCCL calls one Plan collective makes: a broadcast, reduce or all-reduce one per region (the
// executor coalesces them into one launch), any other collective one. A broadcast, reduce or
// all-reduce whose regions have a strided run (core/plan/region_runs.hpp) is packed into one
// contiguous buffer and makes one call.
int nccl_calls(const Op& op);

// Elements a packed collective copies on its critical path (kernels/exec/collectives.cpp): the
// senders pack the regions into the staging buffer before the call and the receivers unpack them
// after it, n each (a broadcast's non-roots write -0.0 over theirs while the root packs). 2 n; 0
// for a collective that is not packed.
std::int64_t packed_copy_elements(const Op& op);

// Bytes a collective op moves per rank on the wire, summed over all of a rank's ops of `phase`
// (or every phase when `phase` is null): the "traffic a strategy adds" figure of reports.
double collective_payload_bytes(const Plan& plan, int rank, const Phase* phase = nullptr);

}  // namespace dmuon
