// Device memory the NCCL executor (kernels/exec/buffers.cpp) allocates on one rank for a Plan,
// in the memory model's terms. The executor runs the Plan's collectives and optimizer ops only:
// no forward/backward compute, so no activations, and nothing is freed between phases. Its
// layout differs from memory_per_gpu's training layout in ways that matter at GiB scale:
//   - per (parameter, buffer kind) it allocates the smallest range covering every region the
//     rank's ops touch, so a forward all-gather or a broadcast of parameters makes the whole bf16
//     `param` copy resident (training: only the blocks in use, FSDP2) and a reduce-scatter or
//     all-reduce of gradients the whole `grad` buffer;
//   - gradients are bf16, the communication dtype (training: fp32, the reduce dtype);
//   - the Newton-Schulz input and output are persistent bf16 buffers over every matrix the rank
//     orthogonalises (training: a workspace of the largest matrix);
//   - fp32 master weights only over the ranges the rank updates (muon_update, adamw ops).
// Mapping onto MemoryBreakdown: master = fp32 master copy; grads = the bf16 grad buffer;
// state = momentum + AdamW m and v (fp32); transient = the bf16 param copy + NS input and output;
// activations = 0.
#pragma once
#include "core/cost/memory_model.hpp"

namespace dmuon {

// Every sub-buffer is rounded up to this many bytes (kernels/exec/buffers.cpp kAlignBytes).
inline constexpr double kExecutorAlignBytes = 256;

// The executor's buffers on one rank (`rank` indexes plan.ranks).
MemoryBreakdown executor_memory_of_rank(const Plan& plan, int rank, const ModelSpec& model, const Routing& routing);

// The rank with the largest total: what `dmuon-bench step` reports as the most allocated.
MemoryBreakdown executor_memory_per_gpu(const Plan& plan, const ModelSpec& model, const Routing& routing);

}  // namespace dmuon
