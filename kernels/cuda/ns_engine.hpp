// Newton-Schulz on the GPU: standard, symmetric and Gram variants over cuBLASLt, batched
// same-shape calls, CUDA-graph replay, an on-device autotuner with an accuracy gate.
//
// This header includes no CUDA header (harness/ code uses it): a stream is passed as
// `Stream`, the same type as cudaStream_t. All data pointers are device pointers.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/optimizer/dtype.hpp"
#include "core/cost/ns_flops.hpp"
#include "core/optimizer/optimizer_config.hpp"

struct CUstream_st;

namespace dmuon::cuda {

using Stream = CUstream_st*;  // == cudaStream_t; nullptr is the legacy default stream

// How one call is computed. All compute the function NsConfig defines; they differ in GEMM
// shapes, flops and rounding order.
// standard:     3 general GEMMs per iteration (A = X X^T; B = bA + cA^2; X = aX + BX), the
//               a/b terms in the GEMM epilogue (beta), what torch.optim.Muon computes.
// symmetric:    X X^T and A^2 as lower-triangle block-row GEMMs, mirrored to full: fewer flops,
//               smaller GEMMs (kept only where the autotuner measures it faster).
// symmetric_lt: cuBLASLt with CUBLASLT_MATMUL_DESC_FILL_MODE = lower on the two symmetric
//               products (available only where the library offers such an algorithm).
// symmetric_sm90: symmetric with X X^T and B = bA + cA^2 from the sm_90a kernel
//               (kernels/cuda/sym_gemm_sm90.hpp: only lower-triangle tiles, the b A term fused
//               in its epilogue, mirrored); m and n multiples of 8 on sm_90 GPUs (elsewhere
//               unavailable, like symmetric_lt). A tall input is normalised transposed, run
//               wide and transposed back in one pass at the end.
// gram:         Gram Newton-Schulz with ns.restarts (Dao-AILab; reference/newton_schulz.cpp).
// gram_symmetric: gram with every m x m product (all symmetric: R, Z, Q are polynomials in
//               X X^T) as lower-triangle block rows, mirrored; the rectangular ones general.
// gram_sm90:    gram with every m x m product through the sm_90a kernel (epilogue fused), and R
//               = X X^T too where the kernel takes X (wide row-major, n % 8 == 0; else one full
//               product); m a multiple of 8, sm_90 GPUs only.
// automatic:    the autotuned winner for (shape, batch, config) on this GPU.
enum class NsImpl { automatic, standard, symmetric, symmetric_lt, symmetric_sm90, gram, gram_symmetric, gram_sm90 };

std::string_view to_string(NsImpl impl);
// Throws dmuon::Error naming `what` for an unknown name.
NsImpl parse_ns_impl(std::string_view name, const std::string& what);
// The cost-model family of an implementation (symmetric_lt -> symmetric). Not for automatic.
NsKernel kernel_family(NsImpl impl);
// Implementations whose results are allowed for this config: standard configs take
// standard/symmetric/symmetric_lt/symmetric_sm90; gram configs take gram and, because Gram == standard in
// exact arithmetic, the standard family at the same compute dtype (Dao-AILab falls back to
// standard NS for square matrices).
std::vector<NsImpl> candidate_impls(const NsConfig& ns, long rows, long cols);

struct NsEngineOptions {
  // The optimizer config's policy (core/optimizer/optimizer_config.hpp, `nonfinite`):
  // error: throw dmuon::Error naming the matrices whose input has a NaN or Inf.
  // skip:  write zeros for those matrices and list them in NsOutcome::skipped.
  NonfinitePolicy non_finite = NonfinitePolicy::error;
  // true: run() synchronises the stream once at its end to read the per-matrix norms (needed
  // to report non-finite inputs by name). false: no host sync; with policy skip the zeroing
  // still happens on the device, nothing is reported, and policy error cannot fire.
  bool check_finite = true;
  bool use_graphs = true;        // capture each (shape, batch, impl, config, pointers) once
  std::string tune_cache_file;   // JSON keyed by GPU name; "" keeps the winners in memory only
  int tune_repeats = 10;         // timed replays per candidate (median), after 2 warm-ups
};

// One batched call: `batch` row-major rows x cols matrices back to back (stride rows*cols).
struct NsCall {
  long rows = 0, cols = 0;
  int batch = 1;
  DType in_dtype = DType::bf16;  // fp32, bf16 or fp16
  const void* in = nullptr;
  void* out = nullptr;           // ns.compute_dtype (bf16 or fp16), same layout; may alias `in`
                                 // only when in_dtype == ns.compute_dtype
  std::vector<std::string> names;  // one per matrix for error messages; empty: "matrix <i>"
};

// One member's share of a sharded call (core/plan/ns_sharding.hpp): `columns` columns of the
// wide X (m rows, m <= the whole call's n), contiguous. column_major: memory holds X_j
// column-major with ld m (a tall matrix's block of rows, in place); else X_j row-major with ld
// `columns` (a wide matrix's column block, copied out of its strided place by the caller).
// `out`: the same layout, in ns.compute_dtype.
struct NsShardCall {
  long m = 0, columns = 0;
  // Split m x m products (Op::ns_product_begin): `members` > 1 and this member's place in the
  // group; 1: every product whole on every member.
  int product_members = 1, position = 0;
  bool column_major = false;
  DType in_dtype = DType::bf16;
  const void* in = nullptr;
  void* out = nullptr;
  std::string name;  // for error messages
};

// The sums over the shard group, from the caller that holds the group's communicator (the
// NCCL executor): each enqueues on `stream` an in-place sum all-reduce over the members.
struct NsShardReduce {
  std::function<void(double* squares, Stream stream)> norm;              // 1 double: ||X_j||_F^2
  std::function<void(float* gram, long elements, Stream stream)> gram;   // m x m fp32: X_j X_j^T
  // In-place all-gather of 16-bit elements (split products only): member p's `each` elements
  // start at blocks + p * each (column block p of a padded m x m product).
  std::function<void(void* blocks, long each, Stream stream)> gather;
};

// The implementation a sharded call runs for `requested`: its X X^T is always the member's full
// partial product (fp32) plus the all-reduce, so the choice only shapes the m x m products.
// automatic -> gram for a Gram config, else standard (the autotuner cannot time a call whose
// products wait for peers); symmetric_sm90 -> symmetric and gram_sm90 -> gram_symmetric (a
// member's X X^T is its fp32 partial product, and split products are column blocks, no triangles);
// symmetric_lt -> symmetric (cuBLASLt offers its fill mode for some shapes only, and members of
// different widths must not disagree on it: one refusing would leave the others waiting in an
// all-reduce); standard, symmetric, gram, gram_symmetric as requested.
NsImpl sharded_impl(NsImpl requested, const NsConfig& ns);

struct NsOutcome {
  NsImpl impl = NsImpl::standard;  // what ran (never automatic)
  std::vector<int> skipped;        // indices of non-finite inputs zeroed (policy skip)
};

// One candidate as the autotuner measured it.
struct NsTuneResult {
  NsImpl impl = NsImpl::standard;
  bool available = true;        // false: no algorithm or kernel for it here (symmetric_lt, _sm90)
  double median_seconds = 0;    // one whole batched call, graph replay
  double rel_diff = 0;          // ||out - out_standard||_F / ||out_standard||_F on the same input
  bool passed_gate = false;     // finite and rel_diff <= accuracy_gate(ns)
  std::string note;
};

// Largest rel_diff from the plain standard implementation a candidate may have: a few times
// the spread two roundings orders of the compute dtype produce on 5 NS steps.
double accuracy_gate(const NsConfig& ns);

class NsEngine {
 public:
  // Creates its own cuBLASLt handle and workspace on the current device; runs on `stream`.
  explicit NsEngine(Stream stream = nullptr, NsEngineOptions options = {});
  ~NsEngine();
  NsEngine(const NsEngine&) = delete;
  NsEngine& operator=(const NsEngine&) = delete;

  // Enqueues one batched NS call on the stream. Transposes to wide internally (no data
  // movement: the GEMM operand order changes), normalises each matrix by its own Frobenius
  // norm in ns.normalize_dtype, iterates in ns.compute_dtype with fp32 accumulation.
  // Throws dmuon::Error for a bad call (sizes, dtypes, null pointers), a CUDA/cuBLAS failure,
  // out of memory (bytes wanted and free), or a non-finite input under policy error.
  NsOutcome run(const NsCall& call, const NsConfig& ns, NsImpl impl = NsImpl::automatic);
  // One member's share of a sharded call, enqueued on the stream (no graph: the all-reduces
  // wait for peers): the squared norm summed by reduce.norm, every X X^T as this member's fp32
  // partial product summed by reduce.gram then stored in the compute dtype, the m x m work
  // redundantly, the m x columns products on its own columns; the order and roundings of run().
  // Every member gets the same sums, hence the same status: all throw alike (as run() does).
  NsOutcome run_sharded(const NsShardCall& call, const NsConfig& ns, NsImpl impl, const NsShardReduce& reduce);

  // Times every candidate on random inputs of this shape (synchronises), gates accuracy,
  // records the fastest passing one as the winner (and in the cache file, if set).
  std::vector<NsTuneResult> tune(long rows, long cols, int batch, const NsConfig& ns);
  // The winner for this key, tuning first when none is known yet.
  NsImpl chosen(long rows, long cols, int batch, const NsConfig& ns);

  // Device bytes held now (GEMM workspaces, iteration buffers, norms); graphs not counted.
  std::size_t workspace_bytes() const;
  // Frees the iteration buffers and drops the captured graphs (the next run reallocates).
  void release_workspace();

  const std::string& gpu_name() const;
  Stream stream() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dmuon::cuda
