// `dmuon-bench sym-gemm`: S = X X^T by the sm_90a triangle kernel, the full cuBLAS GEMM and the
// `symmetric` block rows, side by side in one run, with the kernel's time as a fraction of the
// full GEMM's (issue 16's target: <= 0.55 on 4096 x 14336).
#pragma once

namespace dmuon::bench {

// argv[0] is "sym-gemm". Exit 0 on success, 2 on bad arguments, 1 on a failed run.
int sym_gemm_command(int argc, char** argv);

}  // namespace dmuon::bench
