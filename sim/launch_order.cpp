#include "sim/launch_order.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>

#include "core/plan/plan_writer.hpp"

namespace dmuon::sim {
namespace {

// Elements an op's collective touches, as (param, begin, end) intervals.
using Span = std::tuple<std::size_t, std::int64_t, std::int64_t>;
using Intervals = std::vector<Span>;
Span span(const Region& r) { return {r.param, r.offset, r.offset + r.count}; }

void intervals(const Op& op, Intervals& out) {
  out.clear();
  auto add = [&](const Region& r) {
    if (r.count > 0) out.push_back(span(r));  // an empty region touches nothing
  };
  for (const Region& r : op.regions) add(r);
  for (const Region& r : op.parts) add(r);
  for (const Transfer& t : op.transfers) add(t.from), add(t.to);
  std::sort(out.begin(), out.end());
}

// Whether two sorted interval lists share an element: one pass, advancing the list whose
// current interval ends first. An empty interval shares none (one strictly inside another
// would pass the interval test).
template <class X, class Y, class GetX, class GetY>
bool sorted_overlap(const X& x, const Y& y, GetX get_x, GetY get_y) {
  std::size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    const auto [pa, ba, ea] = get_x(x[i]);
    const auto [pb, bb, eb] = get_y(y[j]);
    if (ba == ea) { ++i; continue; }
    if (bb == eb) { ++j; continue; }
    if (pa == pb && ba < eb && bb < ea) return true;
    if (std::tie(pa, ea) < std::tie(pb, eb)) ++i; else ++j;
  }
  return false;
}

Span same(const Span& s) { return s; }

// An op's one list of regions when that list is all its elements (a gather's parts or an op's
// regions, no transfers), else nullptr.
const std::vector<Region>* only_list(const Op& op) {
  if (!op.transfers.empty() || (!op.regions.empty() && !op.parts.empty())) return nullptr;
  return op.regions.empty() ? &op.parts : &op.regions;
}

bool in_order(const std::vector<Region>& list) {
  return std::is_sorted(list.begin(), list.end(), [](const Region& x, const Region& y) { return span(x) < span(y); });
}

}  // namespace

// Whether two collectives touch a common element. The Plan orders ops per (parameter, buffer),
// so two owners' broadcasts of different experts of one MoE stack are ordered although they
// share no data; only an overlap is a real hazard. Asked for every dependency between two
// collectives of every rank (RealDeps asks once per rank), so the common case reads the ops'
// lists in place: the builders list regions in order, and a pair found overlapping is an
// overlap whatever the order; only a "no" needs both lists sorted, else intervals() sorts copies.
bool real_dependency(const Op& a, const Op& b) {
  if (!is_collective(a.kind) || !is_collective(b.kind)) return true;
  const std::vector<Region>* ra = only_list(a);
  const std::vector<Region>* rb = only_list(b);
  if (ra && rb) {
    if (sorted_overlap(*ra, *rb, span, span)) return true;
    if (in_order(*ra) && in_order(*rb)) return false;
  }
  thread_local Intervals x, y;  // reused
  intervals(a, x);
  intervals(b, y);
  return sorted_overlap(x, y, same, same);
}

// The unit of a forward/backward collective: -1 when it spans several units (a DDP bucket is
// then placed after the last of its units' backward, and never merged).
// Visits the op's parameters as they come (core's for_each_param: repeats included, unsorted):
// whether they share one unit and the lowest unit do not depend on the order, and skipping
// params_touched's sorted copy matters (three calls per collective and rank).
int unit_of(const Op& op, const Routing& routing, const ForwardBackwardCost& units, int* latest_backward) {
  int unit = -1, first = 1 << 30;
  bool single = true;
  auto visit = [&](std::size_t p) {
    const int u = units.unit_of_param[p];
    if (unit >= 0 && u != unit) single = false;
    unit = u;
    first = std::min(first, u);
  };
  for_each_param(op, routing, visit);
  *latest_backward = first;  // backward runs units in reverse: the lowest one finishes last
  return single ? unit : -1;
}

RealDeps::RealDeps(const std::vector<Op>& ops) {
  begin_.reserve(ops.size() + 1);
  for (const Op& op : ops) {
    begin_.push_back(static_cast<std::uint32_t>(real_.size()));
    for (int d : op.deps) real_.push_back(real_dependency(op, ops[static_cast<std::size_t>(d)]) ? 1 : 0);
  }
  begin_.push_back(static_cast<std::uint32_t>(real_.size()));
}

// Dependencies between one unit's merged collectives on one rank, added to `edges` as
// (earlier collective, later collective).
void collect_edges(const Entries& list, const std::vector<Op>& plan_ops, const RealDeps& real,
                   std::set<std::pair<int, int>>& edges) {
  std::map<int, int> collective_of;  // plan op -> collective
  for (const auto& [c, members] : list) {
    for (int m : members) collective_of[m] = c;
  }
  for (const auto& [c, members] : list) {
    for (int m : members) {
      const std::vector<int>& deps = plan_ops[static_cast<std::size_t>(m)].deps;
      for (std::size_t k = 0; k < deps.size(); ++k) {
        auto it = collective_of.find(deps[k]);
        if (it == collective_of.end() || it->second == c) continue;
        if (real.real(m, k)) edges.insert({it->second, c});
      }
    }
  }
}

// One order of all merged collectives that every rank follows: a topological order of every
// rank's dependencies, ties by creation. Ordering them per rank instead lets two ranks order
// two launches differently, which deadlocks (as NCCL would). Throws MergeCycle on a cycle.
std::vector<int> global_positions(int count, const std::set<std::pair<int, int>>& edges) {
  std::vector<std::vector<int>> after(static_cast<std::size_t>(count));
  std::vector<int> pending(static_cast<std::size_t>(count), 0);
  for (const auto& [x, y] : edges) after[static_cast<std::size_t>(x)].push_back(y), ++pending[static_cast<std::size_t>(y)];
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int c = 0; c < count; ++c) {
    if (pending[static_cast<std::size_t>(c)] == 0) ready.push(c);
  }
  std::vector<int> position(static_cast<std::size_t>(count), -1);
  int next = 0;
  while (!ready.empty()) {
    const int c = ready.top();
    ready.pop();
    position[static_cast<std::size_t>(c)] = next++;
    for (int y : after[static_cast<std::size_t>(c)]) {
      if (--pending[static_cast<std::size_t>(y)] == 0) ready.push(y);
    }
  }
  if (next != count) throw MergeCycle("sim: merged collectives depend on each other in a cycle");
  return position;
}

}  // namespace dmuon::sim
