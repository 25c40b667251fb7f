// The symmetric-product kernel's stream-K fixup (sym_gemm_schedule.hpp says when and how items
// are split): a segment without k step 0 leaves its fp32 accumulators in its cluster's workspace
// slot and counts itself in on the flag of the item's head cluster; the head segment waits until
// all have, adds their partials in segment order (the same sum whichever finished first) and
// stores the result. The flags start at zero and the head resets its own, so each launch leaves
// them as it found them (the workspace contract in sym_gemm_sm90.hpp).
#pragma once
#include <cstdint>

#include "kernels/cuda/sym_gemm_epilogue.cuh"

namespace dmuon::cuda::sym {

constexpr int kSlotFloats = 64 * 256;  // one consumer warpgroup's 64 x 256 fp32 accumulators

constexpr long kMaxStreamKClusters = 1024;  // flags for this many clusters lead the workspace
constexpr std::size_t kFlagBytes = kMaxStreamKClusters * 4 * sizeof(unsigned);

// Workspace of a launch: one flag and one slot per (cluster, CTA rank, consumer half). The flags
// sit at the workspace's start whatever a launch's cluster count, so a launch using fewer
// clusters never finds its flags where another left partials.
struct StreamK {
  float* partial = nullptr;
  unsigned* flags = nullptr;
  bool on = false;
  __device__ float* slot(long cluster, int rank, int half) const {
    return partial + ((cluster * 2 + rank) * 2 + half) * static_cast<long>(kSlotFloats);
  }
  __device__ unsigned* flag(long cluster, int rank, int half) const { return flags + (cluster * 2 + rank) * 2 + half; }
};

// Bytes of a workspace for up to `clusters` clusters: the flags, then the slots.
inline std::size_t stream_k_bytes(long clusters) {
  return kFlagBytes + static_cast<std::size_t>(clusters) * 4 * kSlotFloats * sizeof(float);
}

// The warpgroup's fragment, N / 2 floats a thread, in 16-byte stores that consecutive threads
// make contiguous (the reader is the same thread of the same warpgroup of the head cluster).
// Cached in L2 only: the reader runs on another SM.
template <int N>
__device__ __forceinline__ void write_partial(float* slot, const float* acc) {
  const int t = threadIdx.x % 128;
#pragma unroll
  for (int i = 0; i < N / 2; i += 4) {
    __stcg(reinterpret_cast<float4*>(slot) + (i / 4) * 128 + t, make_float4(acc[i], acc[i + 1], acc[i + 2], acc[i + 3]));
  }
}

template <int N>
__device__ __forceinline__ void add_partial(float* acc, const float* slot) {
  const int t = threadIdx.x % 128;
#pragma unroll
  for (int i = 0; i < N / 2; i += 4) {
    const float4 v = __ldcg(reinterpret_cast<const float4*>(slot) + (i / 4) * 128 + t);
    acc[i] += v.x;
    acc[i + 1] += v.y;
    acc[i + 2] += v.z;
    acc[i + 3] += v.w;
  }
}

// After the whole warpgroup wrote its partial: one release increment (the barrier orders the
// other threads' stores before thread 0's fence).
__device__ __forceinline__ void signal_partial(unsigned* flag, int barrier_id) {
  warpgroup_sync(barrier_id);
  if (threadIdx.x % 128 == 0) {
    asm volatile("fence.acq_rel.gpu;\nred.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(flag) : "memory");
  }
}

// Until `count` partials have arrived, then resets the flag for the next launch.
__device__ __forceinline__ void wait_partials(unsigned* flag, unsigned count, int barrier_id) {
  if (threadIdx.x % 128 == 0) {
    unsigned seen = 0;
    do {
      asm volatile("ld.global.acquire.gpu.u32 %0, [%1];" : "=r"(seen) : "l"(flag) : "memory");
    } while (seen != count);
    *flag = 0u;  // every other segment of this item has counted itself in: nobody touches it again
  }
  warpgroup_sync(barrier_id);
}

}  // namespace dmuon::cuda::sym
