// Side-by-side timing of S = X X^T three ways in one process: the sm_90a triangle kernel, the
// full cuBLASLt GEMM of the same product, and the `symmetric` variant's lower block rows plus
// mirror (what NS used before the kernel); then the same three for standard NS's m x m product
// B = c A A + b A (A symmetric m x m; the kernel with b A fused in its epilogue, cuBLAS with it
// as beta). Used by `dmuon-bench sym-gemm`.
#pragma once
#include <algorithm>
#include <string>

#include "core/optimizer/dtype.hpp"

namespace dmuon::cuda {

struct SymGemmTiming {
  long m = 0, n = 0;                 // X is m x n, row-major (m <= n: the NS wide problem)
  int batch = 1;
  // Median milliseconds per call, two rounds each (the rounds interleave the three methods, so
  // their spread is the noise of the comparison). sm90_ms < 0: the kernel is unavailable here.
  double sm90_ms[2] = {-1, -1}, full_ms[2] = {0, 0}, blocks_ms[2] = {0, 0};
  double rel_diff = 0;               // ||S_sm90 - S_full||_F / ||S_full||_F
  long nonfinite = 0;                // non-finite elements in S_sm90 (poisoned before the run)
  std::string note;                  // why sm90 is unavailable, if it is
  // B = c A A + b A on m x m (A = X X^T of an X scaled to keep A^2 inside fp16's range), as above.
  double square_sm90_ms[2] = {-1, -1}, square_full_ms[2] = {0, 0}, square_blocks_ms[2] = {0, 0};
  double square_rel_diff = 0;        // ||B_sm90 - B_full||_F / ||B_full||_F
  long square_nonfinite = 0;
};

// A method's faster round, what every ratio of these timings uses; < 0 stays < 0 (unavailable).
inline double faster_round(const double (&ms)[2]) { return std::min(ms[0], ms[1]); }

SymGemmTiming time_sym_gemm(long m, long n, int batch, DType dtype, int warmup, int repeats);

}  // namespace dmuon::cuda
