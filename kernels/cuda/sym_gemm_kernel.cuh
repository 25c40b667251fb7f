// The sm_90a symmetric-product kernel D = alpha A B^T + beta C (see sym_gemm_sm90.hpp): clusters of
// two CTAs; in each, one producer warp feeds a TMA/mbarrier ring (Cfg) and two consumer warpgroups
// each own 64 rows of a 128 x 256 piece (a row block of A against a column pair of B,
// sym_gemm_schedule.hpp) with m64n256k16 wgmma. Where the two CTAs' pieces share their column
// pair, each loads half of it and multicasts it to both, so a stage is free only when the
// consumers of both CTAs released it. For X X^T both tensor maps describe X. Both CTAs of a
// cluster walk the same segments (sym_gemm_schedule.hpp): whole items, or with stream-K the
// cluster's share of the k steps, split items finished by sym_gemm_stream_k.cuh's fixup. With
// diag_pairs (one operand, no C) a CTA's piece may be a double: two diagonal tiles, one box each,
// each consumer warpgroup computing a whole 128 x 128 tile from its box. The consumers store each
// finished piece themselves (sym_gemm_epilogue.cuh) before its next k loop.
// Device code only, included once, by sym_gemm_sm90.cu (its host launcher).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/sym_gemm_epilogue.cuh"
#include "kernels/cuda/sym_gemm_ptx.cuh"
#include "kernels/cuda/sym_gemm_schedule.hpp"
#include "kernels/cuda/sym_gemm_stream_k.cuh"
#include "kernels/cuda/sym_gemm_wgmma.cuh"

namespace dmuon::cuda::sym {

constexpr int kThreads = 384;                             // producer warpgroup + 2 consumers

// The shared-memory ring: 64-deep k steps (128-byte rows, one 128B-swizzled TMA box of 16 KiB per 128
// rows), 4 stages of 48 KiB. (An 8-stage ring of 32-deep steps with two wgmma groups in flight measured
// 27% slower on H100: reports/sym-gemm-notes.md v5. An overlapped epilogue whose staging tile took the
// fourth stage's room measured slower, and on the same 3 stages no faster than this inline one:
// reports/kernels-sym-gemm.md, stop 48.)
struct Cfg {
  static constexpr int kBK = 64;
  static constexpr int kStages = 4;
  static constexpr int kBoxBytes = kTile * kBK * 2;         // one 128-row TMA box
  static constexpr int kRowBytes = kBK * 2;                 // = the swizzle span
};

struct alignas(1024) Smem {
  unsigned char a[Cfg::kStages][Cfg::kBoxBytes];          // row block of A for the item
  unsigned char b[Cfg::kStages][2 * Cfg::kBoxBytes];      // its two column blocks (rows of B), back to back
  std::uint64_t full[Cfg::kStages];
  std::uint64_t empty[Cfg::kStages];
  long item[Cfg::kStages];                                // cluster item of the stage's piece, -1: stop
  int k0[Cfg::kStages], k1[Cfg::kStages];                 // its segment's k steps (at the first stage)
  alignas(16) unsigned short out[2][kStageElems];         // the epilogue's 64 x 64 chunk per consumer
};
constexpr int kSmemBytes = sizeof(Smem) + 1024;           // + slack to align the dynamic base
static_assert(kSmemBytes <= 227 * 1024, "one CTA's shared memory on sm_90");

template <typename T, int N>
__device__ __forceinline__ void mma(float* acc, std::uint64_t da, std::uint64_t db, int scale_d) {
  if constexpr (std::is_same_v<T, __half>) {
    if constexpr (N == 256) wgmma_m64n256k16_f16(acc, da, db, scale_d);
    else wgmma_m64n128k16_f16(acc, da, db, scale_d);
  } else {
    if constexpr (N == 256) wgmma_m64n256k16_bf16(acc, da, db, scale_d);
    else wgmma_m64n128k16_bf16(acc, da, db, scale_d);
  }
}

// Run by the whole producer warp so that it stays converged (lane 0 issues; all lanes wait).
__device__ void produce(Smem& sm, const CUtensorMap* map_a, const CUtensorMap* map_b, int k_iters, long tiles,
                        long batch, bool stream_k, bool diag_pairs) {
  const bool leader = threadIdx.x % 32 == 0;
  const unsigned rank = cluster_rank();
  const long cluster = blockIdx.x / 2, clusters = gridDim.x / 2, total = cluster_items(tiles, batch, diag_pairs);
  int stage = 0;
  unsigned phase = 0;
  for (long idx = 0;; ++idx) {
    const Segment s = segment_of(cluster, clusters, idx, total, k_iters, stream_k);
    const long item = s.item;
    const Piece p = item < 0 ? Piece{} : decode_piece(item, static_cast<int>(rank), tiles, batch, diag_pairs);
    // The second box: a double's other diagonal tile, else the piece's (first) column block.
    const bool dbl = p.diag_row >= 0;
    const int b_row = (dbl ? p.diag_row : p.col0) * kTile, b_batch = dbl ? p.diag_batch : p.batch;
    const int k_end = item < 0 ? s.k0 + 1 : s.k1;  // the stop mark takes one stage
    for (int kt = s.k0; kt < k_end; ++kt) {
      // Free in both CTAs: the partner's multicast writes this stage of ours and ours of theirs.
      mbar_wait(&sm.empty[stage], phase ^ 1);
      if (leader) {
        if (kt == s.k0) {
          sm.item[stage] = item;
          sm.k0[stage] = s.k0;
          sm.k1[stage] = s.k1;
        }
        if (item < 0) {
          mbar_arrive(&sm.full[stage]);  // releases the consumers with the stop mark
        } else {
          const bool pair = p.col1 >= 0;
          constexpr int kBoxBytes = Cfg::kBoxBytes;
          mbar_arrive_expect_tx(&sm.full[stage], (pair ? 3 : 2) * kBoxBytes);
          const int k0 = kt * Cfg::kBK;
          tma_load_3d(sm.a[stage], map_a, &sm.full[stage], k0, p.row_block * kTile, p.batch);
          if (p.multicast) {
            tma_load_3d_multicast(sm.b[stage] + rank * kBoxBytes, map_b, &sm.full[stage], k0,
                                  (p.col0 + static_cast<int>(rank)) * kTile, p.batch, 0x3);
          } else {
            tma_load_3d(sm.b[stage], map_b, &sm.full[stage], k0, b_row, b_batch);
            if (pair) tma_load_3d(sm.b[stage] + kBoxBytes, map_b, &sm.full[stage], k0, p.col1 * kTile, p.batch);
          }
        }
      }
      __syncwarp();
      if (item < 0) return;
      if (++stage == Cfg::kStages) { stage = 0; phase ^= 1; }
    }
  }
}

// A consumer warpgroup frees a stage in both CTAs of the cluster (each empty barrier counts 4).
__device__ __forceinline__ void release(Smem& sm, int stage) {
  if (threadIdx.x % 128 == 0) {
    mbar_arrive_cluster(cluster_addr(&sm.empty[stage], 0));
    mbar_arrive_cluster(cluster_addr(&sm.empty[stage], 1));
  }
}

// The k loop of one piece for one consumer warpgroup: keeps one wgmma group in flight and releases
// a stage once the group that read it has completed. kDouble: the warpgroup's whole diagonal tile
// from its own box (half 0: sm.a, half 1: sm.b), as two m64n128 products, rows 0-63 into
// acc[0..63] and rows 64-127 into acc[64..127] (N is 256: the same 128 accumulators).
template <typename T, int N, bool kDouble = false>
__device__ __forceinline__ void mainloop(Smem& sm, float* acc, int half, int k_iters, int& stage,
                                         unsigned& phase) {
  using C = Cfg;
  // The first wgmma overwrites (scale_d 0) but its asm reads the registers: defining them here
  // keeps them dead, and out of the register budget, between one piece's epilogue and the next k loop.
#pragma unroll
  for (int i = 0; i < N / 2; ++i) acc[i] = 0.0f;
  for (int kt = 0; kt < k_iters; ++kt) {
    mbar_wait(&sm.full[stage], phase);
    if constexpr (kDouble) {
      unsigned char* box = half == 0 ? sm.a[stage] : sm.b[stage];
      const std::uint64_t d0 = smem_desc<C::kRowBytes>(box);
      const std::uint64_t d1 = smem_desc<C::kRowBytes>(box + C::kBoxBytes / 2);
      wgmma_fence();
#pragma unroll
      for (int k = 0; k < C::kBK / 16; ++k) {
        mma<T, 128>(acc, d0 + 2 * k, d0 + 2 * k, kt > 0 || k > 0);
        mma<T, 128>(acc + 64, d1 + 2 * k, d0 + 2 * k, kt > 0 || k > 0);
      }
    } else {
      const std::uint64_t da = smem_desc<C::kRowBytes>(sm.a[stage] + half * (C::kBoxBytes / 2));
      const std::uint64_t db = smem_desc<C::kRowBytes>(sm.b[stage]);
      wgmma_fence();
#pragma unroll
      for (int k = 0; k < C::kBK / 16; ++k) mma<T, N>(acc, da + 2 * k, db + 2 * k, kt > 0 || k > 0);
    }
    wgmma_commit();
    wgmma_wait<1>();
    if (kt >= 1) release(sm, (stage + C::kStages - 1) % C::kStages);
    if (++stage == C::kStages) { stage = 0; phase ^= 1; }
  }
  wgmma_wait<0>();
  fence_registers(acc, N / 2);
  if (k_iters >= 1) release(sm, (stage + C::kStages - 1) % C::kStages);
}

// A split item's segment after its k loop: the head (k step 0) adds the other segments'
// partials and returns true (it stores the piece); any other leaves its own and returns false.
template <int N>
__device__ __forceinline__ bool fixup(const StreamK& sk, float* acc, long item, int k0, int k_iters, long steps,
                                      int rank, int half) {
  const long cluster = blockIdx.x / 2, clusters = gridDim.x / 2;
  const long first = item * k_iters;
  const long head = cluster_of_step(first, clusters, steps);
  if (k0 > 0) {
    write_partial<N>(sk.slot(cluster, rank, half), acc);
    signal_partial(sk.flag(head, rank, half), half + 1);
    return false;
  }
  const long last = cluster_of_step(first + k_iters - 1, clusters, steps);
  wait_partials(sk.flag(cluster, rank, half), static_cast<unsigned>(last - cluster), half + 1);
  for (long c = cluster + 1; c <= last; ++c) add_partial<N>(acc, sk.slot(c, rank, half));
  return true;
}

template <typename T, bool kHasC>
__device__ void consume(Smem& sm, T* D, const T* C, float alpha, float beta, int m, int k_iters, long tiles,
                        long batch, int half, const StreamK& sk, bool diag_pairs) {
  float acc[128];
  const int rank = static_cast<int>(cluster_rank());
  const long steps = cluster_items(tiles, batch, diag_pairs) * k_iters;
  int stage = 0;
  unsigned phase = 0;
  for (;;) {
    mbar_wait(&sm.full[stage], phase);
    const long item = sm.item[stage];
    if (item < 0) return;
    const int k0 = sm.k0[stage], k1 = sm.k1[stage];
    const Piece p = decode_piece(item, rank, tiles, batch, diag_pairs);
    // Only stream-K splits items; a dummy's segments store nothing and so exchange nothing.
    const bool split = p.store && (k0 > 0 || k1 < k_iters);
    const long entry = static_cast<long>(p.batch) * m * m;
    // A dummy still consumes its stages (the partner's producer counts on the releases) but
    // stores nothing: m = 0 rows pass the epilogue's bounds check.
    const int rows = p.store ? m : 0;
    const int row0 = p.row_block * kTile + half * 64;
    if (p.diag_row >= 0) {
      mainloop<T, 256, true>(sm, acc, half, k1 - k0, stage, phase);
      if (split && !fixup<256>(sk, acc, item, k0, k_iters, steps, rank, half)) continue;
      // This half's diagonal tile (a double's tiles are always real: rows is m).
      const long e = static_cast<long>(half == 0 ? p.batch : p.diag_batch) * m * m;
      const int r0 = (half == 0 ? p.row_block : p.diag_row) * kTile;
      const Scale<T> s{kHasC ? C + e : nullptr, alpha, beta};
      T* out = reinterpret_cast<T*>(sm.out[half]);
      store_mirrored<T, 128, kHasC>(acc, D + e, s, m, rows, r0, r0, 0, out, half + 1);
      store_mirrored<T, 128, kHasC>(acc + 64, D + e, s, m, rows, r0 + 64, r0, 0, out, half + 1);
      continue;
    }
    if (p.col1 >= 0) {
      mainloop<T, 256>(sm, acc, half, k1 - k0, stage, phase);
      if (split && !fixup<256>(sk, acc, item, k0, k_iters, steps, rank, half)) continue;
      const Scale<T> sc{kHasC ? C + entry : nullptr, alpha, beta};
      store_mirrored<T, 256, kHasC>(acc, D + entry, sc, m, rows, row0, p.col0 * kTile, p.col1 * kTile,
                                    reinterpret_cast<T*>(sm.out[half]), half + 1);
    } else {
      mainloop<T, 128>(sm, acc, half, k1 - k0, stage, phase);
      if (split && !fixup<128>(sk, acc, item, k0, k_iters, steps, rank, half)) continue;
      const Scale<T> sc{kHasC ? C + entry : nullptr, alpha, beta};
      store_mirrored<T, 128, kHasC>(acc, D + entry, sc, m, rows, row0, p.col0 * kTile, 0,
                                    reinterpret_cast<T*>(sm.out[half]), half + 1);
    }
  }
}

template <typename T, bool kHasC>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads, 1)
    sym_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, T* D,
                    const T* C, float alpha, float beta, int m, int k_iters, long tiles, long batch,
                    const StreamK sk, bool diag_pairs) {
  extern __shared__ unsigned char raw[];
  // Aligned by an offset from `raw` rather than by rounding the address as an integer: the pointer
  // keeps its shared-memory provenance, so the epilogue's staging reads compile to LDS. Rounded
  // through uintptr_t they were generic 16-bit loads (LD.E.U16), and the epilogue took ~20% of a
  // consumer's samples on 4096 x 4096 (ncu, stop 30).
  auto& sm = *reinterpret_cast<Smem*>(raw + ((1024u - (smem_addr(raw) & 1023u)) & 1023u));
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbar_init(&sm.full[s], 1);
      mbar_init(&sm.empty[s], 4);  // one arrival per consumer warpgroup of either CTA
    }
    mbar_init_fence();
  }
  cluster_sync();  // the partner's barriers exist before any multicast or remote arrival
  // Products with C never pair (sym_gemm_sm90.cu): their instances compile without the doubles.
  const bool pairs = diag_pairs && !kHasC;
  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    // The producer's item decoding spilled at 40; at 56 it spills 24 bytes, 44 in the instances with
    // doubles (once a piece), and 56 is all the consumers' 224 leave (.inc takes only what .dec freed).
    regs_dealloc<56>();
    if (threadIdx.x < 32) produce(sm, &map_a, &map_b, k_iters, tiles, batch, sk.on, pairs);
  } else {
    regs_alloc<224>();  // 2 x 128 x 224 + 128 x 56 = 64K registers: exactly what the launch's 168 a thread hold
    consume<T, kHasC>(sm, D, C, alpha, beta, m, k_iters, tiles, batch, warpgroup - 1, sk, pairs);
  }
  cluster_sync();  // no CTA leaves while its partner may still arrive on its barriers
}

}  // namespace dmuon::cuda::sym
