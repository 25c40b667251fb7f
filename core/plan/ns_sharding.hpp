// Sharded Newton-Schulz: one matrix's NS run jointly by k GPUs of one node, each holding a
// block of columns of the wide orientation X (m <= n, after the transpose NS already does).
//   norm:  ||X||_F^2 = sum_j ||X_j||_F^2            (one scalar all-reduce)
//   standard, per iteration:  A = sum_j X_j X_j^T   (one m x m all-reduce, sum)
//                             B = b A + c A^2       (redundantly on every member)
//                             X_j = a X_j + B X_j   (locally)
//   Gram: R = sum_j X_j X_j^T at the start and after each restart (X_j = Q X_j locally); the
//         m x m iterations on R and Q run redundantly; the result is Q X_j locally.
// In exact arithmetic this is single-device NS; in floating point the all-reduce reassociates
// the sum over columns that one GEMM would do in its own order (docs/sharded-newton-schulz.md).
// Why columns: every m x m product then needs the whole sum, which is one all-reduce, and the
// m x n work (the part that grows with n) divides by k; the m x m work does not, unless the call
// splits its products too (Op::ns_split_products): member i then computes column block i of
// every m x m product (D[:, J_i] = A B[:, J_i] + beta C[:, J_i]), and an all-gather hands the
// blocks to every member where a product is needed whole. Each element is still one dot product
// of a row and a column of the whole operands, so the split changes no arithmetic, only which
// member computes it; the all-gathers move bits unchanged.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/cost/calibration.hpp"
#include "core/cost/ns_flops.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/product_split.hpp"
#include "core/model/routing.hpp"

namespace dmuon {

// m = min(rows, cols), n = max(rows, cols): the wide orientation NS works on.
std::int64_t ns_wide_rows(const MuonMatrix& matrix);
std::int64_t ns_wide_columns(const MuonMatrix& matrix);

// Whether a sharded call works on X = G^T, so that a member's columns of X are rows of the stored
// (row-major) G, one contiguous region: every matrix but a strictly wide one (rows < cols), square
// ones included. Single-device NS keeps X = G for a square matrix; in exact arithmetic
// NS(G^T)^T = NS(G) (every product of the iteration transposes), so the sharded call differs from
// it only by rounding. A strictly wide matrix's columns are one strided region per row of G, which
// the NCCL executor moves as one 2-D block (core/plan/region_runs.hpp).

// Columns [begin, end) of member j of k: ceil(n / k) each, the last one possibly short (a ragged
// split). Throws dmuon::Error when k < 1, j is outside [0, k) or some member would get none.
std::pair<std::int64_t, std::int64_t> ns_shard_columns(std::int64_t n, int k, int j);
// Whether every member of k gets at least one column.
bool ns_shardable(std::int64_t n, int k);

bool ns_shard_by_stored_rows(const MuonMatrix& matrix);

// The matrix's elements that hold columns [begin, end) of the sharded call's X: one region (a
// block of rows of the stored matrix) when ns_shard_by_stored_rows, else one region per row (a
// column block of a row-major matrix is strided).
std::vector<Region> ns_shard_regions(const Routing& routing, std::size_t matrix, std::int64_t begin, std::int64_t end);

// Member j of a sharded call over ranks owner .. owner + k - 1: its columns and regions.
struct NsShardHolding {
  int rank = 0;
  std::int64_t column_begin = 0, column_end = 0;
  std::vector<Region> regions;
};
std::vector<NsShardHolding> ns_shard_holdings(const Routing& routing, std::size_t matrix, int owner, int k);

// Column block [begin, end) of every m x m product that member i of k computes when the call
// splits its products: ceil(m / k) columns each, the last possibly short (ns_shard_columns' rule;
// throws alike). The all-gathers move k blocks of ceil(m / k) columns, the short one padded.
std::pair<std::int64_t, std::int64_t> ns_product_columns(std::int64_t m, int k, int i);
// Whether split op `op` holds exactly member `position`'s block of m product columns over k members
// (every member gets one: ns_shardable(m, k)). Plan::validate, the CPU interpreter and the NCCL
// executor all hold a split call's members to it.
bool holds_product_block(const Op& op, std::int64_t m, int k, int position);

// All-gathers of m x m products in one split call, in the order every member issues them:
// standard NS, B each iteration; Gram NS, per iteration Q before a restart (X_j = Q X_j needs Q
// whole), Z, then R when it is updated, and Q once more for the result Q X_j. R Z and Q stay in
// column blocks otherwise: R Z[:, J] = R Z[:, J] + a R[:, J] and Z Q[:, J] + a Q[:, J] need only
// their own block of the right operand.
int ns_split_gathers(NsKernel kernel, int steps, const std::vector<int>& restarts);

// FLOPs one member does, in ns_flops' convention: the m x n part for its `columns` only; the m x m
// part whole, or with `product_columns` > 0 (a split call) product_columns / m of it.
double ns_shard_flops(NsKernel kernel, std::int64_t rows, std::int64_t cols, std::int64_t columns, int steps,
                      const std::vector<int>& restarts, std::int64_t product_columns = 0);

// The share of the whole call's time one member's work takes: its GEMMs over the whole call's,
// every GEMM counted as the full product the sharded program runs (2 m^2 per column of the
// result; ns_product_counts), its `columns` of each m x n product and `product_columns` of each
// m x m one (0: all m). Not ns_shard_flops' ratio: that counts a Gram m x m product as half a
// GEMM (the blog's convention), while the GPU's Gram products run as full GEMMs (the symmetric
// variants save 3-20% on Hopper, issue 16), so the m x m work a split divides is twice as large.
double ns_shard_share(NsKernel kernel, std::int64_t rows, std::int64_t cols, std::int64_t columns, int steps,
                      const std::vector<int>& restarts, std::int64_t product_columns = 0);

// The all-reduces inside one sharded call: `matrix_all_reduces` of m x m fp32 (the GEMM
// accumulator: partial Gram products are summed before any rounding to the compute dtype)
// and one scalar (the squared norm).
// A call split over `split_members` > 1 adds its all-gathers (ns_split_gathers) of k blocks of
// ceil(m / k) columns in the compute dtype (bf16 or fp16), nccl-tests' size (the gathered output).
struct NsShardComm {
  int matrix_all_reduces = 0;
  double bytes_each = 0;
  int product_all_gathers = 0;
  double gather_bytes_each = 0;
};
NsShardComm ns_shard_comm(NsKernel kernel, std::int64_t rows, std::int64_t cols, int steps, const std::vector<int>& restarts,
                          int split_members = 1);
inline constexpr int kNsAllReduceBytesPerElement = 4;
inline constexpr int kNsGatherBytesPerElement = 2;

// What the planner knows of the node's links to price the all-reduces (a ring over k GPUs:
// 2 (k-1)/k of the bytes at bw, 2 (k-1) steps of latency each).
struct NodeLink {
  double bw_GBps = 0;  // per direction, after efficiency; 0 = sharding off
  double latency_us = 0;
};
double ring_all_reduce_seconds(double bytes, int k, const NodeLink& link);
// A ring all-gather of `bytes` (the gathered output) over k GPUs: (k-1)/k of it at bw, k-1 steps.
double ring_all_gather_seconds(double bytes, int k, const NodeLink& link);

// Seconds one member spends on a sharded call over k GPUs: the full call's time (CostModel)
// scaled by the work share of its widest member, plus its all-reduces (and with `split`, its
// all-gathers: the calibration's measured curves for k GPUs of one node where it has them, else
// the ring over `link`). k = 1: the full call. A strictly wide matrix's member (one region per
// row of G) costs what a contiguous one does: the NCCL executor runs its momentum and update as
// one pitched launch each and packs its collectives (core/plan/region_runs.hpp), whose copies the
// simulator prices on the communication stream. Before it did (one launch per row), a 5120-row
// member's optimizer step measured 48.5 ms on 2 x H200 where a contiguous one took 4.6
// (reports/sharded-ns-split.md).
double sharded_ns_seconds(const CostModel& cost, const NsConfig& ns, std::int64_t rows, std::int64_t cols, int k,
                          const NodeLink& link, bool split = false);
// Of that, the member's compute alone (the full call's time scaled by its widest member's work
// share), without the in-call collectives: what the member's GPU spends computing while the
// rest of the call is spent waiting on NVLink. k = 1: the full call.
double sharded_ns_compute_seconds(const CostModel& cost, const NsConfig& ns, std::int64_t rows, std::int64_t cols, int k,
                                  bool split = false);

// How one call over k GPUs runs under `rule` (products whole on every member, or split) and what
// a member spends on it.
struct NsShardChoice {
  double seconds = 0;
  double compute_seconds = 0;  // of which compute (sharded_ns_compute_seconds)
  bool split = false;
};
NsShardChoice best_sharded_ns(const CostModel& cost, const NsConfig& ns, std::int64_t rows, std::int64_t cols, int k,
                              const NodeLink& link, ProductSplit rule);

// For an executor that does not run sharded calls (the NCCL executor runs them since issue 13;
// kernels/exec/ns_shard_member.hpp): throws dmuon::Error
// naming the Plan's first sharded Newton-Schulz op (rank, op, collective) and the planner key
// that turns sharding off. It scans every rank's list, so every process refuses the same Plan
// at once instead of the ranks without a sharded call waiting for the others.
void refuse_sharded_ns(const Plan& plan, const std::string& executor);

// Distinct sharded Newton-Schulz calls in a Plan (by collective id); split_ns_calls: those whose
// m x m products are split (Op::ns_product_begin).
int sharded_ns_calls(const Plan& plan);
int split_ns_calls(const Plan& plan);

}  // namespace dmuon
