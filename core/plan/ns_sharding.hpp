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
// m x n work (the part that grows with n) divides by k; the m x m work does not.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/cost/calibration.hpp"
#include "core/cost/ns_flops.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"

namespace dmuon {

// m = min(rows, cols), n = max(rows, cols): the wide orientation NS works on.
std::int64_t ns_wide_rows(const MuonMatrix& matrix);
std::int64_t ns_wide_columns(const MuonMatrix& matrix);

// Columns [begin, end) of member j of k: ceil(n / k) each, the last one possibly short (a ragged
// split). Throws dmuon::Error when k < 1, j is outside [0, k) or some member would get none.
std::pair<std::int64_t, std::int64_t> ns_shard_columns(std::int64_t n, int k, int j);
// Whether every member of k gets at least one column.
bool ns_shardable(std::int64_t n, int k);

// The matrix's elements that hold columns [begin, end) of its wide orientation: one region
// (a block of rows of the stored matrix) when NS transposes it (rows > cols), else one region
// per row (a column block of a row-major matrix is strided).
std::vector<Region> ns_shard_regions(const Routing& routing, std::size_t matrix, std::int64_t begin, std::int64_t end);

// Member j of a sharded call over ranks owner .. owner + k - 1: its columns and regions.
struct NsShardHolding {
  int rank = 0;
  std::int64_t column_begin = 0, column_end = 0;
  std::vector<Region> regions;
};
std::vector<NsShardHolding> ns_shard_holdings(const Routing& routing, std::size_t matrix, int owner, int k);

// FLOPs one member does: the m x m part whole, the m x n part for its `columns` only.
double ns_shard_flops(NsKernel kernel, std::int64_t rows, std::int64_t cols, std::int64_t columns, int steps,
                      const std::vector<int>& restarts);

// The all-reduces inside one sharded call: `matrix_all_reduces` of m x m fp32 (the GEMM
// accumulator: partial Gram products are summed before any rounding to the compute dtype)
// and one scalar (the squared norm).
struct NsShardComm {
  int matrix_all_reduces = 0;
  double bytes_each = 0;
};
NsShardComm ns_shard_comm(NsKernel kernel, std::int64_t rows, std::int64_t cols, int steps, const std::vector<int>& restarts);
inline constexpr int kNsAllReduceBytesPerElement = 4;

// What the planner knows of the node's links to price the all-reduces (a ring over k GPUs:
// 2 (k-1)/k of the bytes at bw, 2 (k-1) steps of latency each).
struct NodeLink {
  double bw_GBps = 0;  // per direction, after efficiency; 0 = sharding off
  double latency_us = 0;
};
double ring_all_reduce_seconds(double bytes, int k, const NodeLink& link);

// Seconds one member spends on a sharded call over k GPUs: the full call's time (CostModel)
// scaled by the flops share, plus its all-reduces. k = 1: the full call.
double sharded_ns_seconds(const CostModel& cost, const NsConfig& ns, std::int64_t rows, std::int64_t cols, int k,
                          const NodeLink& link);

// For an executor that does not run sharded calls (the NCCL executor runs them since issue 13;
// kernels/exec/ns_shard_member.hpp): throws dmuon::Error
// naming the Plan's first sharded Newton-Schulz op (rank, op, collective) and the planner key
// that turns sharding off. It scans every rank's list, so every process refuses the same Plan
// at once instead of the ranks without a sharded call waiting for the others.
void refuse_sharded_ns(const Plan& plan, const std::string& executor);

// Distinct sharded Newton-Schulz calls in a Plan (by collective id).
int sharded_ns_calls(const Plan& plan);

}  // namespace dmuon
