// Inline-PTX building blocks of the sm_90a symmetric-product kernel: mbarriers, the bulk tensor
// copy (TMA), wgmma shared-memory descriptors and fences. One concern: Hopper primitives, no policy.
#pragma once
#include <cstdint>

#include <cuda.h>

namespace dmuon::cuda::sym {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}

// Makes the barrier initialisation visible to the async (TMA) proxy before any copy uses it.
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// The producer's arrival: the phase completes when `bytes` more have landed through TMA.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}

// Spins until the phase with this parity has completed (a fresh barrier has completed parity 1).
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

// This CTA's rank in its cluster, and a barrier's address in the CTA of rank `rank`.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ std::uint32_t cluster_addr(const void* local, unsigned rank) {
  std::uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(local)), "r"(rank));
  return remote;
}

// Arrival on a barrier of any CTA of the cluster. No cluster-scope release: what it announces is
// that wgmma reads (already waited for) are done, and a .release.cluster arrival stalled the
// issuing warpgroup about a k step each time (v3: 2.4x slower than v2).
__device__ __forceinline__ void mbar_arrive_cluster(std::uint32_t cluster_bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(cluster_bar) : "memory");
}

// All threads of all CTAs of the cluster.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// One box of a 3-D tensor map (coordinates innermost first) into shared memory, completing on bar.
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1,
                                            int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// The same box written to the same shared-memory offset of every CTA in `mask`, completing on the
// barrier at bar's offset in each of them.
__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0,
                                                      int c1, int c2, std::uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "h"(mask)
      : "memory");
}

// wgmma descriptor of a K-major tile written by TMA with a swizzle as wide as its rows (RowBytes
// = 128 or 64): 8-row atoms 8 * RowBytes apart (stride byte offset), layout type 1 (128B) or 2
// (64B). Stepping k by 16 elements inside a row moves the start address by 32 bytes (+2 encoded).
template <int RowBytes>
__device__ __forceinline__ std::uint64_t smem_desc(const void* tile) {
  static_assert(RowBytes == 128 || RowBytes == 64, "swizzle spans of 128 or 64 bytes");
  const std::uint64_t addr = smem_addr(tile);
  std::uint64_t desc = (addr & 0x3FFFF) >> 4;
  desc |= std::uint64_t(16 >> 4) << 16;                // leading byte offset: unused for swizzled K-major
  desc |= std::uint64_t((8 * RowBytes) >> 4) << 32;    // stride byte offset: next 8-row atom
  desc |= std::uint64_t(RowBytes == 128 ? 1 : 2) << 62;
  return desc;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accumulator reads/writes across an in-flight wgmma.
__device__ __forceinline__ void fence_registers(float* d, int count) {
#pragma unroll
  for (int i = 0; i < count; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

template <unsigned Regs>
__device__ __forceinline__ void regs_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Regs));
}
template <unsigned Regs>
__device__ __forceinline__ void regs_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Regs));
}

}  // namespace dmuon::cuda::sym
