// The overlapped epilogue of the symmetric-product kernel (SymEpilogue::overlap): the consumer
// warpgroups hand a finished piece to three "storer" warps (warps 1-3 of the producer warpgroup,
// idle otherwise) through one 128 x 256 staging tile and go straight on to the next piece's k
// loop. The tile's stores, its mirror and the next piece's C loads then run under tensor work:
// inline (sym_gemm_epilogue.cuh) they left the tensor pipe idle ~15-20% of a product with C
// (reports/kernels-sym-gemm.md, stops 43 and 45). The staging tile's 66 KiB cost the ring its fourth
// 48 KiB stage.
//
// Handshake, once per storing piece, on two mbarriers:
//   storers: wait until their own reads of the previous piece are done (named barrier), load
//            this piece's C into the tile (products with C), arrive on res_free (96 arrivals);
//   consumers: after the k loop (and stream-K's fixup), wait res_free, read C at each result's
//            place, write alpha acc + beta C rounded once (the inline epilogue's arithmetic, so the
//            same bits), arrive on res_full (256 arrivals);
//   storers: wait res_full, store the tile's lower triangle and its transpose from the tile.
// Each side waits for the other's previous phase before arriving on the next, so neither barrier
// can run a phase ahead. Both sides skip what stores nothing: dummies and stream-K's non-head
// segments (the condition `piece_stores` gives both).
// Device code only, included once, by sym_gemm_kernel.cuh.
#pragma once
#include <cstdint>

#include "kernels/cuda/sym_gemm_epilogue.cuh"
#include "kernels/cuda/sym_gemm_handoff.hpp"
#include "kernels/cuda/sym_gemm_ptx.cuh"
#include "kernels/cuda/sym_gemm_schedule.hpp"

namespace dmuon::cuda::sym {

constexpr int kResPitch = 2 * kTile + 8;  // elements; 528-byte rows keep the fragment pairs and the
                                          // storers' column gathers free of bank conflicts
constexpr int kStorers = 96;              // warps 1-3 of the producer warpgroup
constexpr int kStorerBarrier = 3;         // named barrier id (0: __syncthreads; 1, 2: the consumers)

struct OverlapSmem {
  alignas(16) unsigned short res[kTile * kResPitch];  // staging tile: 128 rows x 256 columns
  std::uint64_t res_free;                             // the tile may be written (and holds C)
  std::uint64_t res_full;                             // the tile holds the piece's results
};

// Consumer side: one warpgroup's 64 x N fragment (wgmma's m64nN layout: thread (warp w, lane l)
// holds acc[4j + 2h + e] at row 16w + l/4 + 8h, column 8j + 2(l%4) + e) into the tile at
// (row_base, col_base), as alpha acc + beta C with C read from the same place.
template <typename T, int N, bool kHasC>
__device__ __forceinline__ void stage_fragment(const float* acc, unsigned short* res, int row_base, int col_base,
                                               float alpha, float beta) {
  const int t = threadIdx.x % 128, lane = t % 32, warp = t / 32;
  T* tile = reinterpret_cast<T*>(res);
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row_base + 16 * warp + lane / 4 + 8 * h, c = col_base + 8 * j + 2 * (lane % 4);
      T* at = tile + r * kResPitch + c;
      float v0 = alpha * acc[4 * j + 2 * h], v1 = alpha * acc[4 * j + 2 * h + 1];
      if constexpr (kHasC) {
        T cp[2];
        *reinterpret_cast<std::uint32_t*>(cp) = *reinterpret_cast<const std::uint32_t*>(at);
        v0 = fmaf(beta, to_float(cp[0]), v0);
        v1 = fmaf(beta, to_float(cp[1]), v1);
      }
      T pair[2] = {to_elem<T>(v0), to_elem<T>(v1)};
      *reinterpret_cast<std::uint32_t*>(at) = *reinterpret_cast<std::uint32_t*>(pair);
    }
  }
}

// Storer side (the runs' coordinates: sym_gemm_handoff.hpp).

// C's regions into the tile (zeros outside the matrix), four 16-byte loads in flight a thread.
template <typename T>
__device__ __forceinline__ void load_c(unsigned short* res, const Handoff& h, const T* C, int m, bool vector_loads) {
  const int s = threadIdx.x - 32;
  const int total = h.regions * kRegionVectors;
  constexpr int kAhead = 4;
  for (int base = s; base < total; base += kAhead * kStorers) {
    uint4 v[kAhead];
#pragma unroll
    for (int i = 0; i < kAhead; ++i) {
      const int vi = base + i * kStorers;
      if (vi >= total) break;
      const StoreRun run = tile_run(h, vi);
      const int row = run.d_row, col = run.d_col;
      const T* src = C + h.r[run.region].entry + static_cast<long>(row) * m + col;
      if (vector_loads && row < m && col + 7 < m) {
        v[i] = *reinterpret_cast<const uint4*>(src);
      } else {
        T e[8];
#pragma unroll
        for (int x = 0; x < 8; ++x) e[x] = row < m && col + x < m ? src[x] : T(0.0f);
        v[i] = *reinterpret_cast<const uint4*>(e);
      }
    }
#pragma unroll
    for (int i = 0; i < kAhead; ++i) {
      const int vi = base + i * kStorers;
      if (vi >= total) break;
      const StoreRun run = tile_run(h, vi);
      // Indexed in 16-byte units (kResPitch and tile_col are multiples of 8 elements), so that the
      // store is one st.shared.v4; through an element pointer it compiled to four 4-byte stores.
      reinterpret_cast<uint4*>(res)[(run.tile_row * kResPitch + run.tile_col) / 8] = v[i];
    }
  }
}

// The staged results to D: each region's lower triangle row by row, then its transpose (staging
// column c becomes D row col0 + c, 8 staging rows a run), every element of D written once.
template <typename T>
__device__ __forceinline__ void store_staged(const unsigned short* res, const Handoff& h, T* D, int m, bool aligned) {
  const int s = threadIdx.x - 32;
  const int total = h.regions * kRegionVectors;
  const T* tile = reinterpret_cast<const T*>(res);
  for (int vi = s; vi < total; vi += kStorers) {
    const StoreRun run = tile_run(h, vi);
    if (run.d_row >= m) continue;
    T v[8];
    *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(tile + run.tile_row * kResPitch + run.tile_col);
    store8(D + h.r[run.region].entry, m, run.d_row, run.d_col, v, aligned, [&](int col) { return run_keeps(run, col, m); });
  }
  for (int vi = s; vi < total; vi += kStorers) {
    const StoreRun run = mirror_run(h, vi);
    if (run.d_row >= m) continue;
    const T* src = tile + run.tile_row * kResPitch + run.tile_col;
    T v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = src[e * kResPitch];
    store8(D + h.r[run.region].entry, m, run.d_row, run.d_col, v, aligned, [&](int col) { return run_keeps(run, col, m); });
  }
}

__device__ __forceinline__ void storers_sync() {
  asm volatile("bar.sync %0, %1;" ::"n"(kStorerBarrier), "n"(kStorers) : "memory");
}

// The storer warps' loop: the same segments as the producer, in the same order.
template <typename T, bool kHasC>
__device__ void store_pieces(OverlapSmem& sm, T* D, const T* C, int m, int k_iters, long tiles, long batch,
                             bool stream_k, bool diag_pairs) {
  const int rank = static_cast<int>(cluster_rank());
  const long cluster = blockIdx.x / 2, clusters = gridDim.x / 2, total = cluster_items(tiles, batch, diag_pairs);
  const bool aligned = m % 8 == 0 && reinterpret_cast<std::uintptr_t>(D) % 16 == 0;
  const bool vector_loads = m % 8 == 0 && reinterpret_cast<std::uintptr_t>(C) % 16 == 0;
  unsigned phase = 0;
  for (long idx = 0;; ++idx) {
    const Segment seg = segment_of(cluster, clusters, idx, total, k_iters, stream_k);
    if (seg.item < 0) return;
    const Piece p = decode_piece(seg.item, rank, tiles, batch, diag_pairs);
    if (!piece_stores(p, seg.k0)) continue;
    const Handoff h = handoff_of(p, m);
    storers_sync();  // every storer's reads of the previous piece are done before C overwrites them
    if constexpr (kHasC) load_c(sm.res, h, C, m, vector_loads);
    mbar_arrive(&sm.res_free);
    mbar_wait(&sm.res_full, phase);
    phase ^= 1;
    store_staged(sm.res, h, D, m, aligned);
  }
}

}  // namespace dmuon::cuda::sym
