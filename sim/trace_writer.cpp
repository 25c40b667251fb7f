#include "sim/trace_writer.hpp"

#include "core/io/chrome_trace.hpp"

namespace dmuon::sim {

void write_chrome_trace(const std::string& file, const StepProgram& program, const std::vector<std::vector<double>>& start,
                        const std::vector<std::vector<double>>& end, int gpus_per_node, int nodes) {
  ChromeTrace trace(file, "--trace");
  static const char* kStreamNames[kStreams] = {"compute", "gather", "reduce", "broadcast", "broadcast-local"};
  for (std::size_t r = 0; r < program.world(); ++r) {
    const int node = static_cast<int>(r) / gpus_per_node, gpu = static_cast<int>(r) % gpus_per_node;
    if (nodes > 0 && node >= nodes) break;
    if (gpu == 0) trace.process_name(node, "node " + std::to_string(node));
    for (int s = 0; s < kStreams; ++s) {
      trace.thread_name(node, gpu * kStreams + s, "gpu " + std::to_string(gpu) + " " + kStreamNames[s]);
    }
    for (std::size_t i = 0; i < program.ops(r).size(); ++i) {
      const SimOp& op = program.ops(r)[i];
      trace.complete(op.label, op.category, node, gpu * kStreams + op.stream, start[r][i] * 1e6,
                     (end[r][i] - start[r][i]) * 1e6);
    }
  }
  trace.finish();
}

}  // namespace dmuon::sim
