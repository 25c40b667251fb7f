// Host side of the sm_90a symmetric-product kernel (sym_gemm_kernel.cuh): tensor maps, the
// persistent grid, the stream-K decision and workspace, the measurement knobs, and which
// products the kernel takes.
#include "kernels/cuda/sym_gemm_sm90.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudaTypedefs.h>

#include <cstdlib>

#include "core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/sym_gemm_kernel.cuh"

namespace dmuon::cuda {
namespace sym {
namespace {

// One operand, A or B: rows x k row-major per batch entry.
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
  const cuuint32_t box[3] = {Cfg::kBK, kTile, 1};
  const cuuint32_t unit[3] = {1, 1, 1};
  // Out-of-range rows and k (tails) arrive as zeros, so no bounds checks in the k loop.
  const CUresult r = encode(&map, type, 3, const_cast<void*>(X), dims, strides, box, unit,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw Error("sym_gemm_sm90: cuTensorMapEncodeTiled failed (" + std::to_string(r) + ")");
  return map;
}

// Clusters of two that fit on the device at once (a GPC with an odd count of free SMs holds one
// fewer): the persistent grid is that many clusters, never a second wave of them.
template <typename T, bool kHasC>
int resident_clusters() {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(2, 1, 1);
  config.blockDim = dim3(kThreads, 1, 1);
  config.dynamicSmemBytes = kSmemBytes;
  int clusters = 0;
  DMUON_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, sym_gemm_kernel<T, kHasC>, &config));
  if (clusters < 1) throw Error("sym_gemm_sm90: no cluster of two fits on this device");
  return clusters;
}

// The current device's L2 (one GPU kind per process in practice).
double l2_bytes() {
  static const double bytes = [] {
    int device = 0, l2 = 0;
    DMUON_CUDA_CHECK(cudaGetDevice(&device));
    DMUON_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    return static_cast<double>(l2);
  }();
  return bytes;
}

// DMUON_SYM_STREAM_K: "off" never splits, "force" splits every launch given a workspace over all
// clusters (ranges of at least kMinSegmentSteps), past the rule and the L2 condition; unset, the
// rule decides. Measurement knobs: the A/B of stream-K against the item schedule on one build.
enum class StreamKMode { rule, off, force };
StreamKMode stream_k_mode() {
  static const StreamKMode mode = [] {
    const char* v = std::getenv("DMUON_SYM_STREAM_K");
    if (!v || std::string(v).empty() || std::string(v) == "on") return StreamKMode::rule;
    if (std::string(v) == "off") return StreamKMode::off;
    if (std::string(v) == "force") return StreamKMode::force;
    throw Error(std::string("DMUON_SYM_STREAM_K: expected on, off or force, got \"") + v + "\"");
  }();
  return mode;
}

// DMUON_SYM_DIAG_PAIRS=off keeps every diagonal tile a single piece (sym_gemm_schedule.hpp): a
// measurement knob, the A/B of the diagonal pairs on one build. Unset or "on": one-operand products
// without C pair them.
bool diag_pairs_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("DMUON_SYM_DIAG_PAIRS");
    if (!v || std::string(v).empty() || std::string(v) == "on") return true;
    if (std::string(v) == "off") return false;
    throw Error(std::string("DMUON_SYM_DIAG_PAIRS: expected on or off, got \"") + v + "\"");
  }();
  return on;
}

// Clusters a launch splits over (0: the item schedule).
long split_clusters_for(long tiles, long batch, int k_iters, long clusters, double operand_bytes, bool diag_pairs) {
  const StreamKMode mode = stream_k_mode();
  if (mode == StreamKMode::off) return 0;
  if (mode == StreamKMode::rule) {
    return stream_k_clusters(tiles, batch, k_iters, clusters, operand_bytes, l2_bytes(), diag_pairs);
  }
  return std::min<long>(clusters, cluster_items(tiles, batch, diag_pairs) * k_iters / kMinSegmentSteps);
}

// The clusters one launch runs (every instance has the same shared memory and threads).
template <typename T, bool kHasC>
int launch_clusters() {
  DMUON_CUDA_CHECK(cudaFuncSetAttribute(sym_gemm_kernel<T, kHasC>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  static const int clusters = resident_clusters<T, kHasC>();  // one GPU kind per process in practice
  return clusters;
}

int device_clusters() { return launch_clusters<__nv_bfloat16, true>(); }

template <typename T, bool kHasC>
void launch_typed(const SymProduct& p, cudaStream_t stream) {
  const int clusters = launch_clusters<T, kHasC>();
  const long tiles = (p.m + kTile - 1) / kTile;
  // A diagonal tile of A B^T reads row block a of both A and B: two boxes, so only one-operand
  // products can compute two of them from two boxes. Those with C keep singles: paired, c A^2 + b A
  // measured 9-46% slower on H100 (reports/kernels-sym-gemm.md, stop 44), X X^T 5-10% faster.
  const bool diag_pairs = !p.b && !p.c && diag_pairs_enabled();
  const long items = cluster_items(tiles, p.batch, diag_pairs);
  constexpr int kBK = Cfg::kBK;
  const int k_iters = static_cast<int>((p.k + kBK - 1) / kBK);
  // Stream-K where the items would leave clusters idle and the caller gave a workspace.
  const double operand_bytes = 2.0 * p.m * p.k * p.batch * (p.b ? 2 : 1);
  const long split_clusters =
      p.workspace.ptr ? split_clusters_for(tiles, p.batch, k_iters, clusters, operand_bytes, diag_pairs) : 0;
  StreamK sk;
  if (split_clusters > 0) {
    if (p.workspace.bytes < stream_k_bytes(split_clusters)) {
      throw Error("sym_gemm_sm90: a " + std::to_string(p.workspace.bytes) + "-byte workspace is too small (" +
                  std::to_string(stream_k_bytes(split_clusters)) + " bytes needed; sym_gemm_sm90_workspace_bytes)");
    }
    sk.flags = static_cast<unsigned*>(p.workspace.ptr);
    sk.partial = reinterpret_cast<float*>(static_cast<char*>(p.workspace.ptr) + kFlagBytes);
    sk.on = true;
  }
  const int grid = 2 * static_cast<int>(split_clusters > 0 ? split_clusters : std::min<long>(clusters, items));
  const CUtensorMapDataType type =
      std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const CUtensorMap map_a = make_map(p.a, p.m, p.k, p.batch, type);
  const CUtensorMap map_b = p.b ? make_map(p.b, p.m, p.k, p.batch, type) : map_a;
  sym_gemm_kernel<T, kHasC><<<grid, kThreads, kSmemBytes, stream>>>(
      map_a, map_b, static_cast<T*>(p.d), static_cast<const T*>(p.c), p.alpha, p.beta, static_cast<int>(p.m), k_iters,
      tiles, p.batch, sk, diag_pairs);
  DMUON_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_dtype(const SymProduct& p, cudaStream_t stream) {
  if (p.c) return launch_typed<T, true>(p, stream);
  launch_typed<T, false>(p, stream);
}

// Empty when the current device (its ordinal into *device) is an sm_90 GPU; otherwise why not.
std::string sm90_device(int* device) {
  int major = 0, minor = 0;
  if (cudaGetDevice(device) != cudaSuccess) return "no CUDA device";
  DMUON_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, *device));
  DMUON_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, *device));
  if (major != 9 || minor != 0) return "not an sm_90 GPU";
  return {};
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
  if (sym::overlaps(p.workspace.ptr, p.workspace.bytes, p.a, operand) ||
      sym::overlaps(p.workspace.ptr, p.workspace.bytes, p.b, operand) ||
      sym::overlaps(p.workspace.ptr, p.workspace.bytes, p.c, square) ||
      sym::overlaps(p.workspace.ptr, p.workspace.bytes, p.d, square)) {
    return "the workspace overlaps an operand or D";
  }
  int device = 0;
  return sym::sm90_device(&device);
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

void launch_sym_xxt_sm90(const void* X, long m, long n, int batch, DType dtype, void* S, cudaStream_t stream,
                         SymWorkspace workspace) {
  launch_sym_gemm_sm90(SymProduct::xxt(X, m, n, batch, dtype, S).with_workspace(workspace), stream);
}

bool sym_gemm_sm90_underfills(long m, int batch) {
  const long tiles = (m + sym::kTile - 1) / sym::kTile;
  // Counted with singles, as the m x m products it gates run (those with C, and two-operand ones,
  // never pair their diagonal tiles; an alpha-only one-operand product has batch singles / 4 items
  // fewer, the same answer on the H100's shapes).
  return sym::cluster_items(tiles, batch, false) < sym::device_clusters();
}

std::size_t sym_gemm_sm90_workspace_bytes() {
  int device = 0, sms = 0;
  if (!sym::sm90_device(&device).empty()) return 0;
  DMUON_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sym::stream_k_bytes(std::min<long>(sms / 2, sym::kMaxStreamKClusters));  // clusters of two SMs at most
}

}  // namespace dmuon::cuda
