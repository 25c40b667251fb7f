#include "kernels/exec/deps.hpp"

#include <map>
#include <set>
#include <tuple>

#include "core/plan/plan_writer.hpp"

namespace dmuon::exec {
namespace {

std::size_t at(int i) { return static_cast<std::size_t>(i); }

}  // namespace

std::vector<std::vector<int>> cross_stream_waits(const std::vector<Op>& ops, const Routing& routing) {
  using Key = std::tuple<std::size_t, BufferKind, StreamKind>;
  std::map<Key, int> last_access;
  std::vector<std::vector<int>> waits(ops.size());
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    const Op& op = ops[at(i)];
    const StreamKind other = op.stream == StreamKind::compute ? StreamKind::comm : StreamKind::compute;
    std::set<int> w;
    for (int d : op.deps) {
      if (d >= 0 && d < i && ops[at(d)].stream != op.stream) w.insert(d);
    }
    const auto params = params_touched(op, routing);
    for (std::size_t p : params) {
      for (BufferKind b : buffers_written(op)) {
        const auto it = last_access.find({p, b, other});
        if (it != last_access.end()) w.insert(it->second);
      }
    }
    for (std::size_t p : params) {
      for (BufferKind b : buffers_read(op)) last_access[{p, b, op.stream}] = i;
      for (BufferKind b : buffers_written(op)) last_access[{p, b, op.stream}] = i;
    }
    waits[at(i)].assign(w.begin(), w.end());
  }
  return waits;
}

}  // namespace dmuon::exec
