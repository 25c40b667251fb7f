// `dmuon-bench step`: every strategy of a scenario on the same parameters and random gradients,
// run by the NCCL executor, measured with CUDA events; writes reports/step-<machine>.{md,json}
// and a Chrome trace of one measured step per strategy.
#pragma once

namespace dmuon::bench {

// argv[0] is "step". Returns the process exit code (0 ok, 1 a rank failed, 2 bad arguments).
int step_command(int argc, char** argv);

}  // namespace dmuon::bench
