// `dmuon-bench kernels`: Newton-Schulz variants and fused elementwise kernels on this GPU,
// against torch's NS, writing the calibration file and reports/kernels-<gpu>.{md,json}.
#pragma once

namespace dmuon::bench {

// argv[0] is "kernels". Exit 0 on success, 2 on bad arguments or input, 1 on a failed run.
int kernels_command(int argc, char** argv);

}  // namespace dmuon::bench
