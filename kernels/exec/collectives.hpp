// A Plan collective as NCCL calls on one rank's communication stream. Coalesced regions
// (dedicated's per-layer broadcasts and reduces, DDP buckets) are one ncclGroupStart/End, so
// NCCL fuses them into one launch; all-gather and reduce-scatter map to the NCCL collective
// when the parts are FSDP2's equal contiguous shards and to rooted broadcasts/reduces (one
// group) when they are not; all-to-all is ncclSend/ncclRecv pairs inside one group.
#pragma once
#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "core/plan/plan.hpp"
#include "kernels/comm/world.hpp"
#include "kernels/cuda/ns_engine.hpp"
#include "kernels/exec/buffers.hpp"

namespace dmuon::exec {

// Device scratch for packed collectives on one stream: a broadcast, reduce or all-reduce whose
// regions have a strided run (core/plan/region_runs.hpp: a sharded member's column block, one
// region per row) is packed into it, moved by one NCCL call and unpacked, instead of one call per
// region. The stream's ops run in order, so one buffer serves them all.
struct PackStaging {
  void* data = nullptr;
  std::size_t bytes = 0;
};
// Staging bytes `op` needs on this rank (0: it is not packed).
std::size_t packed_collective_bytes(const Op& op, const DeviceBuffers& buffers);

// Enqueues `op` (a collective of `plan` on `rank`) on `stream`. Throws dmuon::Error starting
// with `where` for an op this rank cannot run (a region it holds no buffer for, a transfer that
// reads and writes overlapping elements of one rank, packed regions larger than `staging`) or an
// NCCL failure at enqueue time.
void launch_collective(const Op& op, const Plan& plan, int rank, comm::RankComms& comms, DeviceBuffers& buffers,
                       cudaStream_t stream, const PackStaging& staging, const std::string& where);

// The all-reduces inside a sharded newton_schulz op (core/plan/ns_sharding.hpp) on the
// communicator of its group: in-place sums of the squared norm (fp64, one element) and of the
// m x m partial Gram products (fp32), on the stream the NS engine passes. NCCL failures become
// dmuon::Error starting with `where`.
cuda::NsShardReduce sharded_ns_reduce(ncclComm_t comm, const std::string& where);

}  // namespace dmuon::exec
