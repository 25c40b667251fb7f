#include "sim/step_program.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/forward_backward_cost.hpp"
#include "core/ns_sharding.hpp"
#include "core/plan_cost.hpp"
#include "core/plan_writer.hpp"

namespace dmuon::sim {
namespace {

// The unit of a forward/backward collective: -1 when it spans several units (a DDP bucket is
// then placed after the last of its units' backward, and never merged).
// Visits the op's parameters as they come (repeats included, unsorted): whether they share one
// unit and the lowest unit do not depend on the order, and skipping params_touched's sorted
// copy matters (three calls per collective and rank).
int unit_of(const Op& op, const Routing& routing, const ForwardBackwardCost& units, int* latest_backward) {
  int unit = -1, first = 1 << 30;
  bool single = true;
  auto visit = [&](std::size_t p) {
    const int u = units.unit_of_param[p];
    if (unit >= 0 && u != unit) single = false;
    unit = u;
    first = std::min(first, u);
  };
  for (std::size_t m : op.matrices) visit(routing.muon_matrices[m].param);
  for (const Region& r : op.regions) visit(r.param);
  for (const Region& r : op.parts) visit(r.param);
  for (const Transfer& t : op.transfers) visit(t.from.param);
  *latest_backward = first;  // backward runs units in reverse: the lowest one finishes last
  return single ? unit : -1;
}

using Entries = std::vector<std::pair<int, std::vector<int>>>;  // (collective, plan ops it stands for)

// Merging one layer's launches can tie two launches in a cycle when the Plan orders different
// owners' collectives on one parameter (its dependencies are per parameter: an MoE expert stack
// holds many owners' matrices). The program is then built again without merging.
struct MergeCycle : Error {
  using Error::Error;
};

// Elements an op's collective touches, as (param, begin, end) intervals.
using Intervals = std::vector<std::tuple<std::size_t, std::int64_t, std::int64_t>>;
void intervals(const Op& op, Intervals& out) {
  out.clear();
  auto add = [&](const Region& r) { out.emplace_back(r.param, r.offset, r.offset + r.count); };
  for (const Region& r : op.regions) add(r);
  for (const Region& r : op.parts) add(r);
  for (const Transfer& t : op.transfers) add(t.from), add(t.to);
  std::sort(out.begin(), out.end());
}

// Whether two collectives touch a common element. The Plan orders ops per (parameter, buffer),
// so two owners' broadcasts of different experts of one MoE stack are ordered although they
// share no data; only an overlap is a real hazard.
bool overlap(const Op& a, const Op& b) {
  thread_local Intervals x, y;  // reused: asked for every dependency between two collectives
  intervals(a, x);
  intervals(b, y);
  std::size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    const auto& [pa, ba, ea] = x[i];
    const auto& [pb, bb, eb] = y[j];
    if (pa == pb && ba < eb && bb < ea) return true;
    if (std::tie(pa, ea) < std::tie(pb, eb)) ++i; else ++j;
  }
  return false;
}

// A dependency of collective `a` on `b` that the step must respect.
bool real_dependency(const Op& a, const Op& b) {
  return !(is_collective(a.kind) && is_collective(b.kind)) || overlap(a, b);
}

// Dependencies between one unit's merged collectives on one rank, added to `edges` as
// (earlier collective, later collective).
void collect_edges(const Entries& list, const std::vector<Op>& plan_ops, std::set<std::pair<int, int>>& edges) {
  std::map<int, int> collective_of;  // plan op -> collective
  for (const auto& [c, members] : list) {
    for (int m : members) collective_of[m] = c;
  }
  for (const auto& [c, members] : list) {
    for (int m : members) {
      for (int d : plan_ops[static_cast<std::size_t>(m)].deps) {
        auto it = collective_of.find(d);
        if (it == collective_of.end() || it->second == c) continue;
        if (real_dependency(plan_ops[static_cast<std::size_t>(m)], plan_ops[static_cast<std::size_t>(d)])) {
          edges.insert({it->second, c});
        }
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

int stream_of(OpKind kind, Phase phase, bool run_ahead, bool one_node, bool one_comm_stream) {
  if (phase == Phase::optimizer || one_comm_stream) return kGatherStream;
  if (run_ahead) return one_node ? kLocalBroadcastStream : kBroadcastStream;
  return kind == OpKind::all_gather || kind == OpKind::broadcast ? kGatherStream : kReduceStream;
}

// Whether the executor enqueues Plan op `i` inside the launch of op `previous` (the op it
// enqueued just before): only when the two are adjacent in the Plan and fused_launch joins them.
bool fuses_with(const std::vector<Op>& ops, int previous, int i) {
  if (previous < 0 || previous != i - 1) return false;
  return fused_launch(ops[static_cast<std::size_t>(previous)], ops[static_cast<std::size_t>(i)]);
}

// Builds one rank's op list; collectives are created in `prog` on first sight.
class RankBuilder {
 public:
  RankBuilder(StepProgram& prog, const Plan& plan, const Routing& routing, const ForwardBackwardCost& units,
              const TrainingSpec& t, bool as_is, bool merge, bool phase_runs)
      : prog_(prog), plan_(plan), routing_(routing), units_(units), t_(t), as_is_(as_is), merge_(merge && !as_is),
        phase_runs_(phase_runs && as_is) {}

  // First pass (collecting): only gathers the ordering constraints into `edges`. Second pass:
  // builds the rank's ops with every unit's launches in `positions` order.
  std::vector<SimOp> build(int rank, const std::vector<NsTime>& compute);
  bool collecting = true;
  std::set<std::pair<int, int>> edges;
  std::vector<int> positions;
  const NsConfig* ns = nullptr;  // the Newton-Schulz config: a sharded call's all-reduces

 private:
  int merged_index(int rank, const Op& op, int unit);
  void classify(int rank);  // fills fwd_, bwd_ (per unit) and optimizer_ops_
  void add_plan_deps(SimOp& s, const std::vector<int>& members, int self);
  int collective_op(int c, const std::vector<int>& members, std::vector<int> extra);
  int sharded_ns(int i, const NsTime& priced);
  void emit_forward_backward();
  int emit(SimOp op) {
    ops_.push_back(std::move(op));
    return static_cast<int>(ops_.size()) - 1;
  }

  StepProgram& prog_;
  const Plan& plan_;
  const Routing& routing_;
  const ForwardBackwardCost& units_;  // forward/backward compute per unit, priced by core
  const TrainingSpec& t_;
  bool as_is_;
  bool merge_;
  // The executor benchmark's two runs (host issue model, plan_as_is): every forward/backward op
  // of the rank before its optimizer ops, as the host enqueues them.
  bool phase_runs_;
  std::vector<SimOp> ops_;
  // The rank being built: its collectives per unit, optimizer-phase ops, plan op -> sim op.
  int rank_ = 0;
  std::vector<Entries> fwd_, bwd_;
  std::vector<int> optimizer_ops_;
  std::vector<int> sim_of_;
  std::vector<std::pair<int, int>> op_unit_;  // classify's scratch: per plan op, unit_of and its latest_backward
  // What classify found for each rank in the collecting pass, moved back in the second: the
  // same result (merged_index only creates collectives on first sight), computed once.
  struct Classified {
    std::vector<Entries> fwd, bwd;
    std::vector<int> optimizer_ops;
  };
  std::vector<Classified> classified_;

 public:
  // Shared across ranks: merge key -> collective index; plan collective id -> merged index;
  // forward collective index -> its Z3 backward copy.
  std::map<std::tuple<int, int, int, int, int, bool>, int> by_key;
  std::vector<int> by_id;  // indexed by the Plan's collective id, -1 = not seen yet
  std::map<int, int> regather;
};

int RankBuilder::merged_index(int rank, const Op& op, int unit) {
  const auto id = static_cast<std::size_t>(op.collective);
  if (id >= by_id.size()) by_id.resize(std::max(id + 1, 2 * by_id.size()), -1);
  if (by_id[id] >= 0) return by_id[id];
  int index = -1;
  const bool mergeable = op.phase != Phase::optimizer && unit >= 0 && merge_;
  const bool run_ahead = op.run_ahead && !as_is_;
  // A broadcast run as an all-reduce is priced and merged as the all-reduce NCCL runs.
  const OpKind kind = op.kind == OpKind::broadcast && op.via_all_reduce ? OpKind::all_reduce : op.kind;
  const auto key = std::make_tuple(int(kind), op.group, int(op.phase), int(op.buffer), unit, run_ahead);
  if (mergeable) {
    auto it = by_key.find(key);
    if (it != by_key.end()) index = it->second;
  }
  if (index < 0) {
    index = static_cast<int>(prog_.collectives.size());
    SimCollective c;
    c.call.kind = kind;
    c.call.members = plan_.groups[static_cast<std::size_t>(op.group)].ranks;
    c.phase = op.phase;
    const auto& members = plan_.groups[static_cast<std::size_t>(op.group)].ranks;
    const bool one_node = std::all_of(members.begin(), members.end(), [&](int r) {
      return plan_.mesh.replica_of(r) == plan_.mesh.replica_of(members.front());
    });
    c.stream = stream_of(op.kind, op.phase, run_ahead, one_node, as_is_);
    c.run_ahead = run_ahead;
    c.label = op.label;
    c.group = plan_.groups[static_cast<std::size_t>(op.group)].name;
    c.merged = 0;
    prog_.collectives.push_back(std::move(c));
    if (mergeable) by_key[key] = index;
  }
  SimCollective& c = prog_.collectives[static_cast<std::size_t>(index)];
  c.merged += 1;
  const bool per_region = kind == OpKind::broadcast || kind == OpKind::reduce || kind == OpKind::all_reduce;
  c.calls += per_region ? std::max<int>(1, static_cast<int>(op.regions.size())) : 1;
  const int bpe = plan_.bytes_per_element;
  if (op.kind == OpKind::all_to_all) {
    for (const Transfer& tr : op.transfers) c.call.transfers.emplace_back(tr.src, tr.dst, double(tr.from.count) * bpe);
    for (const Transfer& tr : op.transfers) c.call.bytes += double(tr.from.count) * bpe;
  } else {
    const double bytes = collective_payload_bytes(op, rank, bpe);
    c.call.bytes += bytes;
    if (kind == OpKind::broadcast || kind == OpKind::reduce) {
      auto it = std::find_if(c.call.rooted.begin(), c.call.rooted.end(), [&](const auto& x) { return x.first == op.root; });
      if (it == c.call.rooted.end()) {
        c.call.rooted.emplace_back(op.root, bytes);
      } else {
        it->second += bytes;
      }
    }
  }
  by_id[id] = index;
  return index;
}

void RankBuilder::classify(int rank) {
  const auto& plan_ops = plan_.ranks[static_cast<std::size_t>(rank)];
  const int U = as_is_ ? 0 : static_cast<int>(units_.units.size());  // as is: no fwd/bwd compute
  fwd_.assign(static_cast<std::size_t>(U), {});
  bwd_.assign(static_cast<std::size_t>(U), {});
  optimizer_ops_.clear();
  // A bucket's launches belong to its first unit: its forward compute needs them, and in the
  // backward, which runs units in reverse, that unit's gradients are the bucket's last.
  std::map<int, int> bucket_unit;
  op_unit_.assign(plan_ops.size(), {-1, 0});
  for (std::size_t i = 0; i < plan_ops.size(); ++i) {
    const Op& op = plan_ops[i];
    if (op.phase == Phase::optimizer || as_is_) continue;
    auto& [unit, first] = op_unit_[i];
    unit = unit_of(op, routing_, units_, &first);
    if (op.bucket < 0) continue;
    auto [it, fresh] = bucket_unit.emplace(op.bucket, first);
    if (!fresh) it->second = std::min(it->second, first);
  }
  for (std::size_t i = 0; i < plan_ops.size(); ++i) {
    const Op& op = plan_ops[i];
    if (op.phase == Phase::optimizer || as_is_) {
      optimizer_ops_.push_back(static_cast<int>(i));
      continue;
    }
    if (!is_collective(op.kind)) throw Error("sim: rank " + std::to_string(rank) + " op '" + op.label + "': compute outside the optimizer phase");
    auto [unit, last] = op_unit_[i];
    if (op.bucket >= 0) unit = last = bucket_unit.at(op.bucket);
    const int c = merged_index(rank, op, unit);
    auto& list = (op.phase == Phase::forward ? fwd_ : bwd_)[static_cast<std::size_t>(unit >= 0 ? unit : last)];
    auto it = std::find_if(list.begin(), list.end(), [&](const auto& x) { return x.first == c; });
    if (it == list.end()) list.push_back({c, {}}), it = list.end() - 1;
    it->second.push_back(static_cast<int>(i));
  }
  if (phase_runs_) {
    std::stable_partition(optimizer_ops_.begin(), optimizer_ops_.end(),
                          [&](int i) { return plan_ops[static_cast<std::size_t>(i)].phase != Phase::optimizer; });
  }
}

void RankBuilder::add_plan_deps(SimOp& s, const std::vector<int>& members, int self) {
  const auto& plan_ops = plan_.ranks[static_cast<std::size_t>(rank_)];
  for (int m : members) {
    for (int d : plan_ops[static_cast<std::size_t>(m)].deps) {
      const int sd = sim_of_[static_cast<std::size_t>(d)];
      if (sd == self) continue;
      if (!real_dependency(plan_ops[static_cast<std::size_t>(m)], plan_ops[static_cast<std::size_t>(d)])) continue;
      if (sd < 0 || sd > self) {
        const Op& a = plan_ops[static_cast<std::size_t>(m)];
        const Op& b = plan_ops[static_cast<std::size_t>(d)];
        throw Error("sim: rank " + std::to_string(rank_) + " op " + std::to_string(m) + " (" + std::string(to_string(a.kind)) +
                    " '" + a.label + "', " + std::string(to_string(a.phase)) + ") depends on op " + std::to_string(d) + " (" +
                    std::string(to_string(b.kind)) + " '" + b.label + "', " + std::string(to_string(b.phase)) +
                    ") that the step order puts after it");
      }
      s.deps.push_back(sd);
    }
  }
}

int RankBuilder::collective_op(int c, const std::vector<int>& members, std::vector<int> extra) {
  const SimCollective& sc = prog_.collectives[static_cast<std::size_t>(c)];
  SimOp s{sc.stream, sc.phase, std::string(to_string(sc.call.kind)), sc.label, 0, c, std::move(extra)};
  s.launches = static_cast<int>(members.size());  // the executor enqueues each Plan collective
  const int index = static_cast<int>(ops_.size());
  for (int m : members) sim_of_[static_cast<std::size_t>(m)] = index;
  add_plan_deps(s, members, index);
  return emit(std::move(s));
}

// A member of a sharded Newton-Schulz call (core/ns_sharding.hpp): its all-reduces on the
// group, one launch each (the squared norm, then every m x m Gram product), on the compute
// stream because the next GEMM waits for each; then the member's share of the compute. The
// all-reduces are listed before the compute (the GPU interleaves them; the sum is the same
// while nothing else runs on the stream).
int RankBuilder::sharded_ns(int i, const NsTime& priced) {
  const Op& op = plan_.ranks[static_cast<std::size_t>(rank_)][static_cast<std::size_t>(i)];
  const MuonMatrix& mm = routing_.muon_matrices.at(op.matrices.at(0));
  const NsShardComm comm = ns_shard_comm(ns_kernel_of(*ns), mm.rows, mm.cols, ns->steps, ns->restarts);
  const auto id = static_cast<std::size_t>(op.collective);
  if (id >= by_id.size()) by_id.resize(std::max(id + 1, 2 * by_id.size()), -1);
  if (by_id[id] < 0) {  // first member seen: the group's collectives, consecutive
    by_id[id] = static_cast<int>(prog_.collectives.size());
    for (int k = 0; k <= comm.matrix_all_reduces; ++k) {
      SimCollective c;
      c.call.kind = OpKind::all_reduce;
      c.call.members = plan_.groups[static_cast<std::size_t>(op.group)].ranks;
      c.call.bytes = k == 0 ? 8 : comm.bytes_each;
      c.phase = Phase::optimizer;
      c.stream = kComputeStream;
      c.label = (k == 0 ? "NS norm " : "NS Gram product ") + op.label;
      c.group = plan_.groups[static_cast<std::size_t>(op.group)].name;
      c.calls = 1;
      prog_.collectives.push_back(std::move(c));
    }
  }
  int last = collective_op(by_id[id], {i}, {});
  for (int k = 1; k <= comm.matrix_all_reduces; ++k) last = collective_op(by_id[id] + k, {}, {last});
  SimOp s{kComputeStream, Phase::optimizer, std::string(to_string(op.kind)), op.label, priced.seconds, -1, {last},
          std::string(source_class(priced.source))};
  s.launches = 1;
  const int index = emit(std::move(s));
  sim_of_[static_cast<std::size_t>(i)] = index;
  return index;
}

// Forward: per unit its gathers (gated by the prefetch depth), then its compute. Backward, in
// reverse: Z3 re-gathers, compute, then the unit's reductions.
void RankBuilder::emit_forward_backward() {
  const int U = static_cast<int>(fwd_.size());
  const int prefetch = static_cast<int>(t_.prefetch_layers);
  std::vector<int> fwd_compute(static_cast<std::size_t>(U), -1), bwd_compute(static_cast<std::size_t>(U), -1);
  for (int u = 0; u < U; ++u) {
    std::vector<int> mine;
    const int gate = u - 1 - prefetch;
    for (const auto& [c, members] : fwd_[static_cast<std::size_t>(u)]) {
      const bool gated = gate >= 0 && !prog_.collectives[static_cast<std::size_t>(c)].run_ahead;
      mine.push_back(collective_op(c, members, gated ? std::vector<int>{fwd_compute[static_cast<std::size_t>(gate)]} : std::vector<int>{}));
    }
    const ComputeUnit& unit = units_.units[static_cast<std::size_t>(u)];
    fwd_compute[static_cast<std::size_t>(u)] = emit({kComputeStream, Phase::forward, "forward", "unit " + std::to_string(u),
                                                     unit.forward_s, -1, mine, std::string(source_class(unit.source))});
  }
  for (int j = 0; j < U; ++j) {
    const auto u = static_cast<std::size_t>(U - 1 - j);
    std::vector<int> mine;
    const int gate = j - 1 - prefetch;
    for (const auto& [c, members] : t_.reshard_after_forward ? fwd_[u] : Entries{}) {
      auto [it, fresh] = regather.emplace(c, static_cast<int>(prog_.collectives.size()));
      if (fresh) {
        SimCollective copy = prog_.collectives[static_cast<std::size_t>(c)];
        copy.phase = Phase::backward;
        copy.label += " (backward re-gather)";
        prog_.collectives.push_back(std::move(copy));
      }
      const SimCollective& sc = prog_.collectives[static_cast<std::size_t>(it->second)];
      SimOp again{sc.stream, Phase::backward, std::string(to_string(sc.call.kind)), sc.label, 0, it->second,
                  gate >= 0 ? std::vector<int>{bwd_compute[static_cast<std::size_t>(U - 1 - gate)]} : std::vector<int>{}};
      again.launches = static_cast<int>(members.size());
      mine.push_back(emit(std::move(again)));
    }
    bwd_compute[u] = emit({kComputeStream, Phase::backward, "backward", "unit " + std::to_string(u), units_.units[u].backward_s, -1,
                           mine, std::string(source_class(units_.units[u].source))});
    for (const auto& [c, members] : bwd_[u]) collective_op(c, members, {bwd_compute[u]});
  }
}

std::vector<SimOp> RankBuilder::build(int rank, const std::vector<NsTime>& compute) {
  ops_.clear();
  rank_ = rank;
  const auto& plan_ops = plan_.ranks[static_cast<std::size_t>(rank)];
  const auto r = static_cast<std::size_t>(rank);
  if (collecting) {
    classify(rank);
    for (auto* lists : {&fwd_, &bwd_}) {
      for (const auto& list : *lists) collect_edges(list, plan_ops, edges);
    }
    if (classified_.size() <= r) classified_.resize(plan_.ranks.size());
    classified_[r] = {std::move(fwd_), std::move(bwd_), std::move(optimizer_ops_)};
    return {};
  }
  if (r < classified_.size()) {
    fwd_ = std::move(classified_[r].fwd);
    bwd_ = std::move(classified_[r].bwd);
    optimizer_ops_ = std::move(classified_[r].optimizer_ops);
    classified_[r] = {};
  } else {
    classify(rank);
  }
  for (auto* lists : {&fwd_, &bwd_}) {
    for (auto& list : *lists) {
      std::stable_sort(list.begin(), list.end(), [&](const auto& x, const auto& y) {
        return positions[static_cast<std::size_t>(x.first)] < positions[static_cast<std::size_t>(y.first)];
      });
    }
  }
  sim_of_.assign(plan_ops.size(), -1);
  emit_forward_backward();
  int previous = -1;  // the Plan op emitted last
  for (int i : optimizer_ops_) {
    const Op& op = plan_ops[static_cast<std::size_t>(i)];
    const bool fused = fuses_with(plan_ops, previous, i);
    previous = i;
    if (is_collective(op.kind)) {
      collective_op(merged_index(rank, op, -1), {i}, {});
      continue;
    }
    if (is_sharded_ns(op)) {
      sharded_ns(i, compute[static_cast<std::size_t>(i)]);
      continue;
    }
    const NsTime& priced = compute[static_cast<std::size_t>(i)];
    SimOp s{kComputeStream, Phase::optimizer, std::string(to_string(op.kind)), op.label, priced.seconds, -1, {},
            std::string(source_class(priced.source))};
    s.launches = fused ? 0 : 1;
    const int index = static_cast<int>(ops_.size());
    sim_of_[static_cast<std::size_t>(i)] = index;
    add_plan_deps(s, {i}, index);
    emit(std::move(s));
  }
  for (auto& s : ops_) {
    std::sort(s.deps.begin(), s.deps.end());
    s.deps.erase(std::unique(s.deps.begin(), s.deps.end()), s.deps.end());
  }
  return std::move(ops_);
}

// Merges runs of consecutive compute-stream ops into one op when nothing can start in between:
// an op joins the run when every dependency it has outside the run lies before the run's
// start in the list, and no collective listed since the run began waits on one of its members. The GPU runs such a run
// back to back anyway; the simulation then needs one event instead of hundreds (an AdamW or
// DDP optimizer phase is ~1000 elementwise kernels per GPU). With `host_issue` a run keeps its
// first op's issue time and the latest end its members' launches allow (SimOp::issued_end_s).
std::vector<SimOp> merge_compute_runs(std::vector<SimOp> ops, bool host_issue) {
  std::vector<int> new_index(ops.size(), -1);
  std::vector<SimOp> out;
  int run_start = -1;  // old index of the current run's first op
  int run_out = -1;    // its index in `out`
  int run_count = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    SimOp& op = ops[i];
    const bool compute = op.collective < 0;
    bool joins = compute && run_out >= 0 && op.phase == out[static_cast<std::size_t>(run_out)].phase &&
                 op.category == out[static_cast<std::size_t>(run_out)].category &&
                 op.issue_clock == out[static_cast<std::size_t>(run_out)].issue_clock &&
                 op.source == out[static_cast<std::size_t>(run_out)].source;  // keeps the shares by source
    if (joins) {
      for (int d : op.deps) joins = joins && (d < run_start || new_index[static_cast<std::size_t>(d)] == run_out);
    }
    std::vector<int> deps;
    for (int d : op.deps) deps.push_back(new_index[static_cast<std::size_t>(d)]);
    if (joins) {
      SimOp& run = out[static_cast<std::size_t>(run_out)];
      run.seconds += op.seconds;
      // Back to back after its first launch's issue, the run ends no earlier than any member's
      // issue plus the GPU time of that member and those after it.
      if (host_issue) run.issued_end_s = std::max(run.issued_end_s + op.seconds, op.issued_end_s);
      run.launches += op.launches;
      for (int d : deps) {
        if (d != run_out) run.deps.push_back(d);
      }
      ++run_count;
      run.label = run.label.substr(0, run.label.find(" (+")) + " (+" + std::to_string(run_count - 1) + ")";
      new_index[i] = run_out;
      continue;
    }
    // A collective that waits on a member of the run must not wait for the whole run.
    if (!compute && std::find(deps.begin(), deps.end(), run_out) != deps.end()) run_out = -1;
    op.deps = std::move(deps);
    new_index[i] = static_cast<int>(out.size());
    if (compute) {
      run_start = static_cast<int>(i), run_out = static_cast<int>(out.size()), run_count = 1;
    } else if (op.stream == kComputeStream) {
      run_out = -1;
    }
    out.push_back(std::move(op));
  }
  for (auto& s : out) {
    std::sort(s.deps.begin(), s.deps.end());
    s.deps.erase(std::unique(s.deps.begin(), s.deps.end()), s.deps.end());
  }
  return out;
}

// "measured 62%, interpolated 30%, roofline 8%" (of the seconds, all GPUs together).
std::string describe_shares(const std::map<std::string_view, double>& seconds_by_source) {
  double total = 0;
  for (const auto& [source, s] : seconds_by_source) total += s;
  std::string out;
  for (const auto& [source, s] : seconds_by_source) {
    char share[32];
    std::snprintf(share, sizeof share, " %.0f%%", total > 0 ? 100 * s / total : 0.0);
    out += (out.empty() ? "" : ", ") + std::string(source) + share;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

void assign_issue_times(std::vector<SimOp>& ops, double seconds_per_launch, bool optimizer_restarts) {
  if (!(seconds_per_launch >= 0)) throw Error("sim: executor issue cost must be >= 0 s a launch");
  long issued[2] = {0, 0};  // launches enqueued so far on each clock
  for (SimOp& op : ops) {
    op.issue_clock = optimizer_restarts && op.phase == Phase::optimizer ? 1 : 0;
    if (op.issue_clock == 0 && issued[1] > 0) {
      throw Error("sim: rank op '" + op.label + "' of the forward/backward run follows optimizer ops (host issue model)");
    }
    long& n = issued[op.issue_clock];
    op.issued_s = seconds_per_launch * double(n + (op.launches > 0 ? 1 : 0));
    n += op.launches;
    // A collective's GPU time is only known when it runs: its bound is its last launch's issue.
    op.issued_end_s = op.collective >= 0 ? seconds_per_launch * double(n) : op.issued_s + op.seconds;
  }
}

StepProgram build_step_program(const Plan& plan, const ModelSpec& model, const Routing& routing,
                               const OptimizerConfig& optimizer, const CostModel& cost, const TrainingSpec& training,
                               const ProgramOptions& options) {
  StepProgram prog;
  // Forward/backward compute per unit: core's cost model (core/forward_backward_cost.hpp).
  const CalibrationTable* calibration = cost.calibration();
  const ForwardBackwardCost units =
      forward_backward_cost(model, training, training.peak_tflops.value_or(cost.device().gemm_tflops),
                            calibration && calibration->forward_backward ? &*calibration->forward_backward : nullptr);
  prog.compute_source = units.description;
  prog.compute_seconds_by_source = units.seconds_by_source;
  prog.fwd_bwd_compute_s = units.total_s;
  if (options.plan_as_is) {
    prog.fwd_bwd_compute_s = 0;
    prog.compute_source = "none (the Plan as the executor benchmark runs it)";
    prog.compute_seconds_by_source.clear();
  }
  std::vector<std::vector<NsTime>> seconds(plan.ranks.size());
  std::map<std::string_view, double> optimizer_by_source;
  for (std::size_t r = 0; r < plan.ranks.size(); ++r) {
    seconds[r] = rank_compute_times(plan.ranks[r], routing, optimizer, cost);
    for (std::size_t i = 0; i < plan.ranks[r].size(); ++i) {
      if (!is_collective(plan.ranks[r][i].kind)) optimizer_by_source[seconds[r][i].source] += seconds[r][i].seconds;
    }
  }
  prog.optimizer_source = cost.calibrated() ? describe_shares(optimizer_by_source) : "roofline";
  // The host issue model, only with a measured cost per launch. Scenario mode (a real step) is
  // kept simple: one host issues the whole program in its order on one clock, never waiting for
  // the GPU, and forward/backward compute units cost it nothing (their kernels' launch cost is
  // PyTorch's, not the executor's, and hides behind a layer's GPU time).
  const std::optional<double> issue_s = cost.executor_issue_seconds();
  prog.issue_s_per_launch = issue_s;
  for (bool merge : {true, false}) {
    prog.ranks.clear();
    prog.collectives.clear();
    RankBuilder builder(prog, plan, routing, units, training, options.plan_as_is, merge, issue_s.has_value());
    builder.ns = &optimizer.muon.ns;
    try {
      for (std::size_t r = 0; r < plan.ranks.size(); ++r) builder.build(static_cast<int>(r), seconds[r]);
      builder.positions = global_positions(static_cast<int>(prog.collectives.size()), builder.edges);
      builder.collecting = false;
      for (std::size_t r = 0; r < plan.ranks.size(); ++r) {
        std::vector<SimOp> ops = builder.build(static_cast<int>(r), seconds[r]);
        if (issue_s) assign_issue_times(ops, *issue_s, options.plan_as_is);
        prog.ranks.push_back(merge_compute_runs(std::move(ops), issue_s.has_value()));
      }
    } catch (const MergeCycle&) {
      if (!merge) throw;
      prog.launches_note = "one launch per Plan collective (merging a layer's launches would form a cycle)";
      continue;
    }
    break;
  }
  for (auto& c : prog.collectives) {
    if (c.call.members.size() != 1) continue;
    c.local_seconds = cost.elementwise_seconds(2 * c.call.bytes) + (c.calls - 1) * cost.launch_overhead_s();
  }
  return prog;
}

}  // namespace dmuon::sim
