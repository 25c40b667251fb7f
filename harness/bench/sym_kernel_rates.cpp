#include "harness/bench/sym_kernel_rates.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <tuple>

#include "kernels/cuda/sym_gemm_timing.hpp"

namespace dmuon::bench {

std::string ms_cell(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return v < 0 ? "n/a" : b;
}

std::vector<SymKernelRate> measure_sym_kernel_rates(const std::vector<BenchShape>& shapes,
                                                    const std::vector<DType>& dtypes, int warmup, int repeats) {
  std::set<std::tuple<long, long, int>> seen;
  std::vector<SymKernelRate> out;
  for (const BenchShape& s : shapes) {
    const long m = std::min(s.rows, s.cols), n = std::max(s.rows, s.cols);
    for (DType t : dtypes) {
      if (!seen.insert({m, n, static_cast<int>(t)}).second) continue;
      const cuda::SymGemmTiming g = cuda::time_sym_gemm(m, n, 1, t, warmup, repeats);
      SymKernelRate r;
      r.m = m;
      r.n = n;
      r.dtype = t;
      r.note = g.note;
      r.xxt_full_ms = cuda::faster_round(g.full_ms);
      r.square_full_ms = cuda::faster_round(g.square_full_ms);
      if (g.sm90_ms[0] > 0) r.xxt_sm90_ms = cuda::faster_round(g.sm90_ms);
      if (g.square_sm90_ms[0] > 0) r.square_sm90_ms = cuda::faster_round(g.square_sm90_ms);
      out.push_back(r);
    }
  }
  return out;
}

std::string sym_kernel_rates_markdown(const std::vector<SymKernelRate>& rates) {
  if (rates.empty()) return {};
  std::ostringstream md;
  md << "## The symmetric kernel against the full cuBLAS GEMM\n\n"
     << "Per model shape (its wide orientation X, m x n), the sm_90a triangle kernel "
        "(`kernels/cuda/sym_gemm_sm90.hpp`) and cuBLAS computing the same product in this process: X X^T, and "
        "standard NS's B = c A A + b A on the m x m A (the kernel with b A fused in its epilogue, cuBLAS with it as "
        "beta). Each time is the faster of two rounds' medians (`dmuon-bench sym-gemm` shows both rounds and the "
        "block-row variant). Half a GEMM's work is the ideal ratio, 0.5.\n\n"
     << "| X | dtype | X X^T sm90 ms | X X^T cuBLAS ms | ratio | B sm90 ms | B cuBLAS ms | ratio |\n"
     << "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& r : rates) {
    md << "| " << r.m << "x" << r.n << " | " << to_string(r.dtype) << " | " << ms_cell(r.xxt_sm90_ms) << " | "
       << ms_cell(r.xxt_full_ms) << " | " << ms_cell(r.xxt_ratio()) << " | " << ms_cell(r.square_sm90_ms) << " | "
       << ms_cell(r.square_full_ms) << " | " << ms_cell(r.square_ratio()) << " |" << (r.note.empty() ? "" : " " + r.note)
       << "\n";
  }
  return md.str() + "\n";
}

nlohmann::json sym_kernel_rates_json(const std::vector<SymKernelRate>& rates) {
  nlohmann::json out = nlohmann::json::array();
  auto value = [](double v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); };
  for (const auto& r : rates) {
    out.push_back({{"m", r.m},
                   {"n", r.n},
                   {"dtype", std::string(to_string(r.dtype))},
                   {"xxt_sm90_ms", value(r.xxt_sm90_ms)},
                   {"xxt_full_ms", r.xxt_full_ms},
                   {"xxt_fraction_of_full", value(r.xxt_ratio())},
                   {"square_sm90_ms", value(r.square_sm90_ms)},
                   {"square_full_ms", r.square_full_ms},
                   {"square_fraction_of_full", value(r.square_ratio())},
                   {"note", r.note}});
  }
  return out;
}

}  // namespace dmuon::bench
