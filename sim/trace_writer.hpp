// Chrome trace (Trace Event format, opens in Perfetto / chrome://tracing) of a simulated step:
// one process per node, one thread per GPU stream (compute, gather, reduce), one "X" event per
// op with its category (forward, newton_schulz, all_gather, ...).
#pragma once
#include <string>
#include <vector>

#include "sim/step_program.hpp"

namespace dmuon::sim {

// start/end: seconds per rank per op, for the written ranks at least. Only the GPUs of the first
// `nodes` nodes are written (all when nodes <= 0): a 1024-GPU step has millions of ops. Throws dmuon::Error naming the
// file when it cannot be written.
void write_chrome_trace(const std::string& file, const StepProgram& program, const std::vector<std::vector<double>>& start,
                        const std::vector<std::vector<double>>& end, int gpus_per_node, int nodes);

}  // namespace dmuon::sim
