// dmuon-bench: the benchmarks, one subcommand each.
//   step     every strategy's optimizer step on real GPUs through the NCCL executor
//            (harness/dmuon_bench_step.*)
//   kernels  Newton-Schulz and elementwise kernels, torch baseline, calibration file
//            (plugs in below where DMUON_BENCH_HAVE_KERNELS is defined)
//   sym-gemm the sm_90a X X^T triangle kernel beside cuBLAS (harness/dmuon_bench_sym_gemm.*;
//            built with kernels)
//   calibrate  everything the simulator prices for a scenario, measured on this machine
//            (harness/dmuon_bench_calibrate.*; where both of the above are built)
//   refit-overhead  a one-GPU calibration's local step overhead re-derived from its probe's
//            logged phase with the current fit (harness/dmuon_bench_refit.*; no GPU)
#include <cstring>
#include <iostream>
#include <string>

#ifdef DMUON_BENCH_HAVE_STEP
#include "harness/dmuon_bench_step.hpp"
#endif
#ifdef DMUON_BENCH_HAVE_KERNELS
#include "harness/dmuon_bench_kernels.hpp"  // int dmuon::bench::kernels_command(int argc, char** argv)
#include "harness/dmuon_bench_sym_gemm.hpp"
#endif
#ifdef DMUON_BENCH_HAVE_CALIBRATE
#include "harness/dmuon_bench_calibrate.hpp"
#include "harness/dmuon_bench_refit.hpp"
#endif

namespace {

int usage(std::ostream& out, int code) {
  out << "usage: dmuon-bench <subcommand> [options]   (dmuon-bench <subcommand> --help)\n"
#ifdef DMUON_BENCH_HAVE_STEP
         "  step      measure every strategy's optimizer step on this machine's GPUs (NCCL executor)\n"
#endif
#ifdef DMUON_BENCH_HAVE_KERNELS
         "  kernels   Newton-Schulz and elementwise kernel benchmarks, calibration file\n"
         "  sym-gemm  the sm_90a X X^T triangle kernel beside the full cuBLAS GEMM\n"
#endif
#ifdef DMUON_BENCH_HAVE_CALIBRATE
         "  calibrate measure everything the simulator prices for a scenario (calibration file)\n"
         "  refit-overhead  re-derive a one-GPU calibration's local step overhead from its probe's phase\n"
#endif
      ;
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(std::cerr, 2);
  const std::string sub = argv[1];
  if (sub == "-h" || sub == "--help") return usage(std::cout, 0);
  // Subcommands see argv from their own name on: argv[0] is the subcommand.
#ifdef DMUON_BENCH_HAVE_STEP
  if (sub == "step") return dmuon::bench::step_command(argc - 1, argv + 1);
#endif
#ifdef DMUON_BENCH_HAVE_KERNELS
  // ---- `kernels` (issue [C]) plugs in here ----
  if (sub == "kernels") return dmuon::bench::kernels_command(argc - 1, argv + 1);
  if (sub == "sym-gemm") return dmuon::bench::sym_gemm_command(argc - 1, argv + 1);
#endif
#ifdef DMUON_BENCH_HAVE_CALIBRATE
  if (sub == "calibrate") return dmuon::bench::calibrate_command(argc - 1, argv + 1);
  if (sub == "refit-overhead") return dmuon::bench::refit_overhead_command(argc - 1, argv + 1);
#endif
  std::cerr << "dmuon-bench: unknown subcommand '" << sub << "'\n";
  return usage(std::cerr, 2);
}
