// Human-readable listing of a Plan (what `--print-plan` shows) and per-rank totals.
#pragma once
#include <ostream>

#include "core/plan.hpp"

namespace dmuon {

struct ModelSpec;
struct Routing;

// Bytes one rank contributes to or receives from a collective (payload, not wire traffic):
// broadcast/reduce/all_reduce: the regions; all_gather/reduce_scatter: the whole gathered or
// reduced tensor; all_to_all: what this rank sends plus what it receives.
double collective_payload_bytes(const Op& op, int rank, int bytes_per_element);

// One line per op: index, stream, phase, kind, buffer, group/root, label, payload, deps.
// `max_ops_per_rank` < 0 prints everything.
void print_plan(std::ostream& out, const Plan& plan, const ModelSpec& model, const Routing& routing,
                int max_ops_per_rank = -1);

}  // namespace dmuon
