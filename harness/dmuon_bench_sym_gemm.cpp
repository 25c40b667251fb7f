#include "harness/dmuon_bench_sym_gemm.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "core/error.hpp"
#include "harness/bench/kernel_shapes.hpp"
#include "harness/bench/sym_kernel_rates.hpp"
#include "kernels/cuda/sym_gemm_timing.hpp"

namespace dmuon::bench {
namespace {

namespace po = boost::program_options;

// Flops of the full product (2 m^2 n per matrix), the one both ratios are counted against.
double full_tflops(const cuda::SymGemmTiming& t, double ms) { return 2.0 * t.m * t.m * t.n * t.batch / (ms * 1e-3) / 1e12; }

std::string table(const std::vector<cuda::SymGemmTiming>& rows, DType dtype) {
  std::ostringstream o;
  o << "| shape (X, " << to_string(dtype) << ") | batch | sm90 triangle ms | full cuBLAS ms | symmetric block rows ms | "
       "sm90 / full | blocks / full | full-GEMM-equivalent TFLOP/s (sm90, full) | rel diff sm90 vs full | unwritten |\n"
    << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& t : rows) {
    const double s = cuda::faster_round(t.sm90_ms), f = cuda::faster_round(t.full_ms),
                 b = cuda::faster_round(t.blocks_ms);
    char ratio[64], tf[64];
    std::snprintf(ratio, sizeof ratio, "%.3f | %.3f", s > 0 ? s / f : -1.0, b / f);
    std::snprintf(tf, sizeof tf, "%.0f, %.0f", s > 0 ? full_tflops(t, s) : 0.0, full_tflops(t, f));
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.2e", t.rel_diff);
    o << "| " << t.m << "x" << t.n << " | " << t.batch << " | " << ms_cell(t.sm90_ms[0]) << " / " << ms_cell(t.sm90_ms[1])
      << " | " << ms_cell(t.full_ms[0]) << " / " << ms_cell(t.full_ms[1]) << " | " << ms_cell(t.blocks_ms[0]) << " / "
      << ms_cell(t.blocks_ms[1]) << " | " << ratio << " | " << tf << " | " << diff << " | " << t.nonfinite << " |"
      << (t.note.empty() ? "" : " " + t.note) << "\n";
  }
  o << "\nEach time: median of the timed calls, two rounds (round 1 / round 2; the ratios use each "
       "method's faster round). Full-GEMM-equivalent TFLOP/s counts 2 m^2 n for every method.\n";
  o << "\n| B = c A A + b A (A m x m, " << to_string(dtype) << ") | batch | sm90, b A fused, ms | full cuBLAS, b A as beta, ms | "
       "block rows + mirror ms | sm90 / full | blocks / full | rel diff sm90 vs full | non-finite |\n"
    << "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& t : rows) {
    const double s = cuda::faster_round(t.square_sm90_ms), f = cuda::faster_round(t.square_full_ms),
                 b = cuda::faster_round(t.square_blocks_ms);
    char line[160];
    std::snprintf(line, sizeof line, "%.3f | %.3f | %.2e | %ld", s > 0 ? s / f : -1.0, b / f, t.square_rel_diff,
                  t.square_nonfinite);
    o << "| " << t.m << "x" << t.m << " (X " << t.m << "x" << t.n << ") | " << t.batch << " | " << ms_cell(t.square_sm90_ms[0]) << " / "
      << ms_cell(t.square_sm90_ms[1]) << " | " << ms_cell(t.square_full_ms[0]) << " / " << ms_cell(t.square_full_ms[1]) << " | "
      << ms_cell(t.square_blocks_ms[0]) << " / " << ms_cell(t.square_blocks_ms[1]) << " | " << line << " |\n";
  }
  o << "\nA is X X^T of the row's X refilled at N(0, 1/n) (A^2 stays finite in fp16); b, c are Keller's "
       "(-4.7750, 2.0315).\n";
  return o.str();
}

}  // namespace

int sym_gemm_command(int argc, char** argv) {
  std::string shapes = "4096x14336,4096x4096,2048x11008,1024x4096,8192x28672", dtype_name = "bf16", report;
  int warmup = 3, repeats = 20;
  po::options_description o("dmuon-bench sym-gemm options");
  o.add_options()("help,h", "this help")
      ("shapes", po::value(&shapes)->default_value(shapes), "X shapes MxN[:batch],... (row-major X, m <= n)")
      ("dtype", po::value(&dtype_name)->default_value(dtype_name), "bf16 or fp16")
      ("warmup", po::value(&warmup)->default_value(warmup), "untimed calls first")
      ("repeats", po::value(&repeats)->default_value(repeats), "timed calls per method and round (median)")
      ("report-md", po::value(&report), "also write the table here");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, o), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << o;
      return 0;
    }
    const DType dtype = parse_dtype(dtype_name, "--dtype");
    std::vector<cuda::SymGemmTiming> rows;
    // RxC[:count] with the count as the batch; R <= C is the NS wide problem the kernel serves.
    for (const BenchShape& s : parse_shape_list(shapes)) {
      rows.push_back(cuda::time_sym_gemm(s.rows, s.cols, s.count, dtype, warmup, repeats));
      std::cerr << "sym-gemm " << s.label() << " done\n";
    }
    const std::string text = table(rows, dtype);
    std::cout << text;
    if (!report.empty()) {
      std::ofstream f(report);
      f << text;
      if (!f) throw Error(report + ": cannot write");
    }
    return 0;
  } catch (const po::error& e) {
    std::cerr << "dmuon-bench sym-gemm: " << e.what() << "\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "dmuon-bench sym-gemm: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dmuon::bench
