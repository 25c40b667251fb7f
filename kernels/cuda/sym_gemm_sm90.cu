// The sm_90a symmetric-product kernel D = alpha A B^T + beta C (see sym_gemm_sm90.hpp): clusters of
// two CTAs; in each, one producer warp feeds a TMA/mbarrier ring (Cfg) and two consumer warpgroups
// each own 64 rows of a 128 x 256 piece (a row block of A against a column pair of B,
// sym_gemm_schedule.hpp) with m64n256k16 wgmma. Where the two CTAs' pieces share their column
// pair, each loads half of it and multicasts it to both, so a stage is free only when the
// consumers of both CTAs released it. For X X^T both tensor maps describe X.
#include "kernels/cuda/sym_gemm_sm90.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudaTypedefs.h>

#include <cstdlib>

#include "core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/sym_gemm_epilogue.cuh"
#include "kernels/cuda/sym_gemm_ptx.cuh"
#include "kernels/cuda/sym_gemm_schedule.hpp"
#include "kernels/cuda/sym_gemm_wgmma.cuh"

namespace dmuon::cuda {
namespace sym {
namespace {

constexpr int kThreads = 384;                             // producer warpgroup + 2 consumers

// The shared-memory ring for a k depth of BK per stage. 64: 128-byte rows, 4 stages of 48 KiB.
// 32: 64-byte rows, 8 stages of 24 KiB, two wgmma groups in flight: the same bytes, but a stage
// is locked by the wgmmas for half as long, so more of the ring is in flight as prefetch.
template <int BK>
struct Cfg {
  static constexpr int kStages = BK == 64 ? 4 : 8;
  static constexpr int kInflight = BK == 64 ? 1 : 2;        // wgmma groups kept in flight
  static constexpr int kBoxBytes = kTile * BK * 2;          // one 128-row TMA box
  static constexpr int kRowBytes = BK * 2;                  // = the swizzle span
  static constexpr CUtensorMapSwizzle kSwizzle = BK == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
};

template <int BK>
struct alignas(1024) Smem {
  using C = Cfg<BK>;
  unsigned char a[C::kStages][C::kBoxBytes];              // row block of A for the item
  unsigned char b[C::kStages][2 * C::kBoxBytes];          // its two column blocks (rows of B), back to back
  std::uint64_t full[C::kStages];
  std::uint64_t empty[C::kStages];
  long item[C::kStages];                                  // cluster item of the stage's piece, -1: stop
  alignas(16) unsigned short out[2][kStageElems];         // epilogue chunk of each consumer
};
template <int BK>
constexpr int kSmemBytes = sizeof(Smem<BK>) + 1024;       // + slack to align the dynamic base

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
template <int BK>
__device__ void produce(Smem<BK>& sm, const CUtensorMap* map_a, const CUtensorMap* map_b, int k_iters, long tiles,
                        long batch) {
  const bool leader = threadIdx.x % 32 == 0;
  const unsigned rank = cluster_rank();
  const long cluster = blockIdx.x / 2, clusters = gridDim.x / 2, total = cluster_items(tiles, batch);
  int stage = 0;
  unsigned phase = 0;
  for (long k = 0;; ++k) {
    const long item = cluster_item(cluster, clusters, k, total);
    const Piece p = item < 0 ? Piece{} : decode_piece(item, static_cast<int>(rank), tiles, batch);
    for (int kt = 0; kt < k_iters; ++kt) {
      // Free in both CTAs: the partner's multicast writes this stage of ours and ours of theirs.
      mbar_wait(&sm.empty[stage], phase ^ 1);
      if (leader) {
        if (kt == 0) sm.item[stage] = item;
        if (item < 0) {
          mbar_arrive(&sm.full[stage]);  // releases the consumers with the stop mark
        } else {
          const bool pair = p.col1 >= 0;
          constexpr int kBoxBytes = Cfg<BK>::kBoxBytes;
          mbar_arrive_expect_tx(&sm.full[stage], (pair ? 3 : 2) * kBoxBytes);
          const int k0 = kt * BK;
          tma_load_3d(sm.a[stage], map_a, &sm.full[stage], k0, p.row_block * kTile, p.batch);
          if (p.multicast) {
            tma_load_3d_multicast(sm.b[stage] + rank * kBoxBytes, map_b, &sm.full[stage], k0,
                                  (p.col0 + static_cast<int>(rank)) * kTile, p.batch, 0x3);
          } else {
            tma_load_3d(sm.b[stage], map_b, &sm.full[stage], k0, p.col0 * kTile, p.batch);
            if (pair) tma_load_3d(sm.b[stage] + kBoxBytes, map_b, &sm.full[stage], k0, p.col1 * kTile, p.batch);
          }
        }
      }
      __syncwarp();
      if (item < 0) return;
      if (++stage == Cfg<BK>::kStages) { stage = 0; phase ^= 1; }
    }
  }
}

// A consumer warpgroup frees a stage in both CTAs of the cluster (each empty barrier counts 4).
template <int BK>
__device__ __forceinline__ void release(Smem<BK>& sm, int stage) {
  if (threadIdx.x % 128 == 0) {
    mbar_arrive_cluster(cluster_addr(&sm.empty[stage], 0));
    mbar_arrive_cluster(cluster_addr(&sm.empty[stage], 1));
  }
}

// The k loop of one piece for one consumer warpgroup: keeps kInflight wgmma groups in flight and
// releases a stage once the group that read it has completed.
template <typename T, int N, int BK>
__device__ __forceinline__ void mainloop(Smem<BK>& sm, float* acc, int half, int k_iters, int& stage,
                                         unsigned& phase) {
  using C = Cfg<BK>;
  // The first wgmma overwrites (scale_d 0) but its asm reads the registers: defining them here
  // keeps them dead, and out of the register budget, between one piece's epilogue and the next k loop.
#pragma unroll
  for (int i = 0; i < N / 2; ++i) acc[i] = 0.0f;
  for (int kt = 0; kt < k_iters; ++kt) {
    mbar_wait(&sm.full[stage], phase);
    const std::uint64_t da = smem_desc<C::kRowBytes>(sm.a[stage] + half * (C::kBoxBytes / 2));
    const std::uint64_t db = smem_desc<C::kRowBytes>(sm.b[stage]);
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < BK / 16; ++k) mma<T, N>(acc, da + 2 * k, db + 2 * k, kt > 0 || k > 0);
    wgmma_commit();
    wgmma_wait<C::kInflight>();
    if (kt >= C::kInflight) release(sm, (stage + C::kStages - C::kInflight) % C::kStages);
    if (++stage == C::kStages) { stage = 0; phase ^= 1; }
  }
  wgmma_wait<0>();
  fence_registers(acc, N / 2);
  for (int j = k_iters < C::kInflight ? k_iters : C::kInflight; j >= 1; --j) {
    release(sm, (stage + C::kStages - j) % C::kStages);
  }
}

template <typename T, int BK, bool kHasC>
__device__ void consume(Smem<BK>& sm, T* D, const T* C, float alpha, float beta, int m, int k_iters, long tiles,
                        long batch, int half) {
  float acc[128];
  T* out = reinterpret_cast<T*>(sm.out[half]);
  const int rank = static_cast<int>(cluster_rank());
  int stage = 0;
  unsigned phase = 0;
  for (;;) {
    mbar_wait(&sm.full[stage], phase);
    const long item = sm.item[stage];
    if (item < 0) return;
    const Piece p = decode_piece(item, rank, tiles, batch);
    const long entry = static_cast<long>(p.batch) * m * m;
    T* d = D + entry;
    const Scale<T> sc{kHasC ? C + entry : nullptr, alpha, beta};
    const int row0 = p.row_block * kTile + half * 64;
    // A dummy still consumes its stages (the partner's producer counts on the releases) but
    // stores nothing: m = 0 rows pass the epilogue's bounds check.
    const int rows = p.store ? m : 0;
    if (p.col1 >= 0) {
      mainloop<T, 256, BK>(sm, acc, half, k_iters, stage, phase);
      store_mirrored<T, 256, kHasC>(acc, d, sc, m, rows, row0, p.col0 * kTile, p.col1 * kTile, out, half + 1);
    } else {
      mainloop<T, 128, BK>(sm, acc, half, k_iters, stage, phase);
      store_mirrored<T, 128, kHasC>(acc, d, sc, m, rows, row0, p.col0 * kTile, 0, out, half + 1);
    }
  }
}

template <typename T, int BK, bool kHasC>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads, 1)
    sym_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, T* D,
                    const T* C, float alpha, float beta, int m, int k_iters, long tiles, long batch) {
  extern __shared__ unsigned char raw[];
  // Aligned by an offset from `raw` rather than by rounding the address as an integer: the pointer
  // keeps its shared-memory provenance, so the epilogue's staging reads compile to LDS. Rounded
  // through uintptr_t they were generic 16-bit loads (LD.E.U16), and the epilogue took ~20% of a
  // consumer's samples on 4096 x 4096 (ncu, stop 30).
  auto& sm = *reinterpret_cast<Smem<BK>*>(raw + ((1024u - (smem_addr(raw) & 1023u)) & 1023u));
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg<BK>::kStages; ++s) {
      mbar_init(&sm.full[s], 1);
      mbar_init(&sm.empty[s], 4);  // one arrival per consumer warpgroup of either CTA
    }
    mbar_init_fence();
  }
  cluster_sync();  // the partner's barriers exist before any multicast or remote arrival
  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    regs_dealloc<56>();  // the producer's item decoding spilled at 40
    if (threadIdx.x < 32) produce(sm, &map_a, &map_b, k_iters, tiles, batch);
  } else {
    regs_alloc<224>();  // 2 x 128 x 224 + 128 x 56 <= 64K registers
    consume<T, BK, kHasC>(sm, D, C, alpha, beta, m, k_iters, tiles, batch, warpgroup - 1);
  }
  cluster_sync();  // no CTA leaves while its partner may still arrive on its barriers
}

// One operand, A or B: rows x k row-major per batch entry.
template <int BK>
CUtensorMap make_map(const void* X, long rows, long k, int batch, CUtensorMapDataType type) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    DMUON_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !fn) throw Error("sym_gemm_sm90: no cuTensorMapEncodeTiled in the driver");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  CUtensorMap map{};
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(k) * 2, static_cast<cuuint64_t>(rows) * k * 2};
  const cuuint32_t box[3] = {BK, kTile, 1};
  const cuuint32_t unit[3] = {1, 1, 1};
  // Out-of-range rows and k (tails) arrive as zeros, so no bounds checks in the k loop.
  const CUresult r = encode(&map, type, 3, const_cast<void*>(X), dims, strides, box, unit,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, Cfg<BK>::kSwizzle,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw Error("sym_gemm_sm90: cuTensorMapEncodeTiled failed (" + std::to_string(r) + ")");
  return map;
}

// Clusters of two that fit on the device at once (a GPC with an odd count of free SMs holds one
// fewer): the persistent grid is that many clusters, never a second wave of them.
template <typename T, int BK, bool kHasC>
int resident_clusters() {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(2, 1, 1);
  config.blockDim = dim3(kThreads, 1, 1);
  config.dynamicSmemBytes = kSmemBytes<BK>;
  int clusters = 0;
  DMUON_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, sym_gemm_kernel<T, BK, kHasC>, &config));
  if (clusters < 1) throw Error("sym_gemm_sm90: no cluster of two fits on this device");
  return clusters;
}

template <typename T, int BK, bool kHasC>
void launch_typed(const SymProduct& p, cudaStream_t stream) {
  DMUON_CUDA_CHECK(cudaFuncSetAttribute(sym_gemm_kernel<T, BK, kHasC>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        kSmemBytes<BK>));
  static const int clusters = resident_clusters<T, BK, kHasC>();  // one GPU kind per process in practice
  const long tiles = (p.m + kTile - 1) / kTile;
  const long items = cluster_items(tiles, p.batch);
  const int grid = 2 * static_cast<int>(std::min<long>(clusters, items));
  const CUtensorMapDataType type =
      std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const CUtensorMap map_a = make_map<BK>(p.a, p.m, p.k, p.batch, type);
  const CUtensorMap map_b = p.b ? make_map<BK>(p.b, p.m, p.k, p.batch, type) : map_a;
  const int k_iters = static_cast<int>((p.k + BK - 1) / BK);
  sym_gemm_kernel<T, BK, kHasC><<<grid, kThreads, kSmemBytes<BK>, stream>>>(
      map_a, map_b, static_cast<T*>(p.d), static_cast<const T*>(p.c), p.alpha, p.beta, static_cast<int>(p.m), k_iters,
      tiles, p.batch);
  DMUON_CUDA_CHECK(cudaGetLastError());
}

// DMUON_SYM_GEMM_BK=32 selects the 8-stage, 64-byte-row ring: a measurement knob, default 64
// (32 measured 27% slower on H100, reports/sym-gemm-notes.md v5).
template <typename T, bool kHasC>
void launch_k_depth(const SymProduct& p, cudaStream_t stream) {
  static const bool k32 = [] {
    const char* v = std::getenv("DMUON_SYM_GEMM_BK");
    return v && std::string(v) == "32";
  }();
  if (k32) return launch_typed<T, 32, kHasC>(p, stream);
  launch_typed<T, 64, kHasC>(p, stream);
}

template <typename T>
void launch_dtype(const SymProduct& p, cudaStream_t stream) {
  if (p.c) return launch_k_depth<T, true>(p, stream);
  launch_k_depth<T, false>(p, stream);
}

// Whether [p, p + bytes) and [q, q + bytes_q) share a byte.
bool overlaps(const void* p, std::size_t bytes, const void* q, std::size_t bytes_q) {
  if (!p || !q) return false;
  const auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(q);
  return a < b + bytes_q && b < a + bytes;
}

}  // namespace
}  // namespace sym

std::string sym_gemm_sm90_unsupported(const SymProduct& p) {
  if (p.dtype != DType::bf16 && p.dtype != DType::fp16) return "dtype is not bf16/fp16";
  if (p.m < 1 || p.k < 1 || p.m > (1L << 30) || p.k > (1L << 30) || p.batch < 1) return "bad size";
  if (!p.a) return "no A";
  if (p.k % 8 != 0) return "k is not a multiple of 8 (TMA needs 16-byte row strides)";
  for (const void* x : {p.a, p.b}) {
    if (reinterpret_cast<std::uintptr_t>(x) % 16 != 0) return "A or B is not 16-byte aligned";
  }
  const std::size_t operand = static_cast<std::size_t>(p.m) * p.k * p.batch * 2;
  const std::size_t square = static_cast<std::size_t>(p.m) * p.m * p.batch * 2;
  // (No D yet, as sym_xxt_sm90_unsupported asks: the operands alone.)
  if (sym::overlaps(p.d, square, p.a, operand) || sym::overlaps(p.d, square, p.b, operand) ||
      sym::overlaps(p.d, square, p.c, square)) {
    return "D overlaps an input (other CTAs still read it while D is written)";
  }
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return "no CUDA device";
  DMUON_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  DMUON_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major != 9 || minor != 0) return "not an sm_90 GPU";
  return {};
}

void launch_sym_gemm_sm90(const SymProduct& p, cudaStream_t stream) {
  const std::string why = p.d ? sym_gemm_sm90_unsupported(p) : std::string("no D");
  if (!why.empty()) throw Error("sym_gemm_sm90 " + std::to_string(p.m) + "x" + std::to_string(p.k) + ": " + why);
  if (p.dtype == DType::fp16) return sym::launch_dtype<__half>(p, stream);
  sym::launch_dtype<__nv_bfloat16>(p, stream);
}

std::string sym_xxt_sm90_unsupported(long m, long n, DType dtype, const void* X) {
  return sym_gemm_sm90_unsupported(SymProduct::xxt(X, m, n, 1, dtype, nullptr));
}

void launch_sym_xxt_sm90(const void* X, long m, long n, int batch, DType dtype, void* S, cudaStream_t stream) {
  launch_sym_gemm_sm90(SymProduct::xxt(X, m, n, batch, dtype, S), stream);
}

}  // namespace dmuon::cuda
