// Human-readable listing of a Plan (what `--print-plan` shows) and per-rank totals.
#pragma once
#include <ostream>

#include "core/plan/plan.hpp"

namespace dmuon {

struct ModelSpec;
struct Routing;


// One line per op: index, stream, phase, kind, buffer, group/root, label, payload, deps.
// `max_ops_per_rank` < 0 prints everything.
void print_plan(std::ostream& out, const Plan& plan, const ModelSpec& model, const Routing& routing,
                int max_ops_per_rank = -1);

}  // namespace dmuon
