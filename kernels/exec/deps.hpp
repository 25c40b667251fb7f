// Which ops on the other stream each op of a rank must wait for (pure host logic, no CUDA):
// its Plan dependencies there, and, for every (parameter, buffer) it writes, the last op there
// that read or wrote it. The Plan records last writers only; a write must also wait for the
// earlier readers on the other stream (write after read).
#pragma once
#include <vector>

#include "core/plan/plan.hpp"
#include "core/model/routing.hpp"

namespace dmuon::exec {

std::vector<std::vector<int>> cross_stream_waits(const std::vector<Op>& ops, const Routing& routing);

}  // namespace dmuon::exec
