// `dmuon-bench calibrate`: measures on this machine everything the simulator prices for one
// scenario (GEMM/copy ceilings, launch cost, Newton-Schulz calls of the scenario's Plans and a
// grid per kernel family, fused elementwise kernels and copies against size, NCCL collectives
// on every communicator shape) and writes the calibration file (core/cost/calibration.hpp), merging
// the forward/backward measurements of harness/tools/measure_layers.py when given.
#pragma once

namespace dmuon::bench {

// argv[0] is "calibrate". Exit 0 on success, 2 on bad arguments or input (checked before any
// GPU work), 1 when there is no GPU or a measurement failed; one line on stderr for either.
int calibrate_command(int argc, char** argv);

}  // namespace dmuon::bench
