// The sm_90a symmetric kernel's rate as a fraction of the full cuBLAS GEMM of the same product,
// per model shape (issue 16): X X^T of the shape's wide orientation and standard NS's
// B = c A A + b A on its m x m, each against cuBLAS in the same process (cuda::time_sym_gemm).
// `dmuon-bench kernels` measures them after its NS rows and writes them into its reports.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/optimizer/dtype.hpp"
#include "harness/bench/kernel_shapes.hpp"

namespace dmuon::bench {

struct SymKernelRate {
  long m = 0, n = 0;  // X is m x n, m <= n
  DType dtype = DType::bf16;
  double xxt_sm90_ms = -1, xxt_full_ms = 0;        // each method's faster round; sm90 < 0: unavailable
  double square_sm90_ms = -1, square_full_ms = 0;
  std::string note;                                // why the kernel is unavailable, if it is
  double xxt_ratio() const { return xxt_sm90_ms > 0 ? xxt_sm90_ms / xxt_full_ms : -1; }
  double square_ratio() const { return square_sm90_ms > 0 ? square_sm90_ms / square_full_ms : -1; }
};

// One row per distinct (min, max) of `shapes` and dtype.
std::vector<SymKernelRate> measure_sym_kernel_rates(const std::vector<BenchShape>& shapes,
                                                    const std::vector<DType>& dtypes, int warmup, int repeats);
// A time in ms or a ratio to three decimals; negative (the kernel unavailable): n/a.
std::string ms_cell(double v);
std::string sym_kernel_rates_markdown(const std::vector<SymKernelRate>& rates);
nlohmann::json sym_kernel_rates_json(const std::vector<SymKernelRate>& rates);

}  // namespace dmuon::bench
