#include "sim/trace_writer.hpp"

#include <cstdio>
#include <memory>

#include "core/error.hpp"

namespace dmuon::sim {
namespace {

// Labels come from parameter names; keep the JSON valid whatever they contain.
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

}  // namespace

void write_chrome_trace(const std::string& file, const StepProgram& program, const std::vector<std::vector<double>>& start,
                        const std::vector<std::vector<double>>& end, int gpus_per_node, int nodes) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(file.c_str(), "w"), &std::fclose);
  if (!f) throw Error("--trace: cannot write '" + file + "'");
  static const char* kStreamNames[kStreams] = {"compute", "gather", "reduce", "broadcast"};
  std::fprintf(f.get(), "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  bool first = true;
  auto sep = [&] {
    if (!first) std::fprintf(f.get(), ",\n");
    first = false;
  };
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    const int node = static_cast<int>(r) / gpus_per_node, gpu = static_cast<int>(r) % gpus_per_node;
    if (nodes > 0 && node >= nodes) break;
    if (gpu == 0) {
      sep();
      std::fprintf(f.get(), "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"node %d\"}}", node, node);
    }
    for (int s = 0; s < kStreams; ++s) {
      sep();
      std::fprintf(f.get(), "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"gpu %d %s\"}}",
                   node, gpu * kStreams + s, gpu, kStreamNames[s]);
    }
    for (std::size_t i = 0; i < program.ranks[r].size(); ++i) {
      const SimOp& op = program.ranks[r][i];
      sep();
      std::fprintf(f.get(), "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}",
                   escaped(op.label).c_str(), op.category.c_str(), node, gpu * kStreams + op.stream, start[r][i] * 1e6,
                   (end[r][i] - start[r][i]) * 1e6);
    }
  }
  std::fprintf(f.get(), "\n]}\n");
  if (std::ferror(f.get())) throw Error("--trace: error writing '" + file + "'");
}

}  // namespace dmuon::sim
