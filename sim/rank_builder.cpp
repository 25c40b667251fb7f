#include "sim/rank_builder.hpp"

#include <algorithm>
#include <string>

#include "core/cost/fsdp2_copies.hpp"
#include "core/error.hpp"
#include "core/plan/ns_sharding.hpp"
#include "core/plan/plan_writer.hpp"
#include "core/plan/region_runs.hpp"

namespace dmuon::sim {
namespace {

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

}  // namespace

int RankBuilder::merged_index(int rank, const Op& op, int unit) {
  const auto id = static_cast<std::size_t>(op.collective);
  if (id >= by_id.size()) by_id.resize(std::max(id + 1, 2 * by_id.size()), -1);
  if (by_id[id] >= 0) return by_id[id];
  int index = -1;
  const bool mergeable = op.phase != Phase::optimizer && unit >= 0 && merge_;
  const bool run_ahead = op.run_ahead && !as_is_;
  // A broadcast run as an all-reduce is priced and merged as the all-reduce NCCL runs.
  const OpKind kind = executed_collective_kind(op);
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
  c.calls += nccl_calls(op);
  // FSDP2 as fsdp2_step.py runs it (training.fsdp2_copies) reduces the gradients in fp32
  // (MixedPrecisionPolicy reduce_dtype): its backward reduce-scatters move 4-byte elements.
  const bool fp32_reduce = t_.fsdp2_copies && op.kind == OpKind::reduce_scatter && op.phase == Phase::backward;
  const int bpe = fp32_reduce ? 4 : plan_.bytes_per_element;
  // A packed collective (strided regions): the pack before the call and the unpack after it,
  // each element read and written once, one 2-D copy per run each way.
  const std::int64_t copies = packed_copy_elements(op);
  if (copies > 0 && cost) {
    const auto runs = static_cast<double>(region_runs(op.regions).size());
    c.pack_seconds += cost->elementwise_seconds(2.0 * double(copies) * bpe) + 2 * runs * cost->launch_overhead_s();
  }
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
  real_ = RealDeps(plan_ops);  // both passes read it: asked once
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
  const auto& plan_ops = plan_.ranks[static_cast<std::size_t>(list_rank_)];
  for (int m : members) {
    const std::vector<int>& deps = plan_ops[static_cast<std::size_t>(m)].deps;
    for (std::size_t k = 0; k < deps.size(); ++k) {
      const int d = deps[k];
      const int sd = sim_of_[static_cast<std::size_t>(d)];
      if (sd == self) continue;
      if (!real_.real(m, k)) continue;
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

// A member of a sharded Newton-Schulz call (core/plan/ns_sharding.hpp): its all-reduces on the
// group, one launch each (the squared norm, then every m x m Gram product), and a split call's
// all-gathers of its m x m products (Op::ns_product_begin), on the compute
// stream because the next GEMM waits for each; then the member's share of the compute. The
// all-reduces are listed before the compute (the GPU interleaves them; the sum is the same
// while nothing else runs on the stream).
int RankBuilder::sharded_ns(int i, const NsTime& priced) {
  const Op& op = plan_.ranks[static_cast<std::size_t>(list_rank_)][static_cast<std::size_t>(i)];
  const MuonMatrix& mm = routing_.muon_matrices.at(op.matrices.at(0));
  const std::vector<int>& members = plan_.groups[static_cast<std::size_t>(op.group)].ranks;
  const NsShardComm comm = ns_shard_comm(ns_kernel_of(*ns), mm.rows, mm.cols, ns->steps, ns->restarts,
                                         splits_ns_products(op) ? static_cast<int>(members.size()) : 1);
  const int launches = 1 + comm.matrix_all_reduces + comm.product_all_gathers;
  const auto id = static_cast<std::size_t>(op.collective);
  if (id >= by_id.size()) by_id.resize(std::max(id + 1, 2 * by_id.size()), -1);
  if (by_id[id] < 0) {  // first member seen: the group's collectives, consecutive
    by_id[id] = static_cast<int>(prog_.collectives.size());
    for (int k = 0; k < launches; ++k) {
      const bool gather = k > comm.matrix_all_reduces;
      SimCollective c;
      c.call.kind = gather ? OpKind::all_gather : OpKind::all_reduce;
      c.call.members = members;
      c.call.bytes = k == 0 ? 8 : gather ? comm.gather_bytes_each : comm.bytes_each;
      c.phase = Phase::optimizer;
      c.stream = kComputeStream;
      c.label = (k == 0 ? "NS norm " : gather ? "NS product gather " : "NS Gram product ") + op.label;
      c.group = plan_.groups[static_cast<std::size_t>(op.group)].name;
      c.calls = 1;
      prog_.collectives.push_back(std::move(c));
    }
  }
  int last = collective_op(moved(by_id[id]), {i}, {});
  for (int k = 1; k < launches; ++k) last = collective_op(moved(by_id[id] + k), {}, {last});
  SimOp s{kComputeStream, Phase::optimizer, std::string(to_string(op.kind)), op.label, priced.seconds, -1, {last},
          std::string(source_class(priced.source))};
  s.launches = 1;
  const int index = emit(std::move(s));
  sim_of_[static_cast<std::size_t>(i)] = index;
  return index;
}

// Steady state across steps: a forward collective of step t+1 reads parameters that this rank
// updates (or that its owner sends) in step t's optimizer phase; it waits for the last
// optimizer op of this rank touching any of them. On an owner that is the matrix's update; on
// a rank that only receives, nothing of step t writes them and the collective waits for the
// owner through the collective itself.
void RankBuilder::set_producers() {
  const auto& plan_ops = plan_.ranks[static_cast<std::size_t>(list_rank_)];
  last_writer_.assign(units_.unit_of_param.size(), -1);
  for (int i : optimizer_ops_) {
    const Op& op = plan_ops[static_cast<std::size_t>(i)];
    const int s = sim_of_[static_cast<std::size_t>(i)];
    if (op.phase != Phase::optimizer || s < 0) continue;
    for_each_param(op, routing_, [&](std::size_t p) { last_writer_[p] = std::max(last_writer_[p], s); });
  }
  for (std::size_t i = 0; i < plan_ops.size(); ++i) {
    const Op& op = plan_ops[i];
    const int s = sim_of_[i];
    if (op.phase != Phase::forward || !is_collective(op.kind) || s < 0) continue;
    int& producer = ops_[static_cast<std::size_t>(s)].producer;
    for_each_param(op, routing_, [&](std::size_t p) { producer = std::max(producer, last_writer_[p]); });
  }
}

int RankBuilder::fsdp2_copy(const Entries& entries, OpKind kind, Phase phase, int unit, std::vector<int> deps,
                            double& host_wait) {
  if (!t_.fsdp2_copies || !cost) return -1;
  const auto& plan_ops = plan_.ranks[static_cast<std::size_t>(list_rank_)];
  double bytes = 0;
  for (const auto& [c, members] : entries) {
    for (int m : members) {
      const Op& op = plan_ops[static_cast<std::size_t>(m)];
      if (op.kind != kind) continue;
      double elements = 0;
      for (const Region& part : op.parts) elements += double(part.count);
      const int ranks = static_cast<int>(plan_.groups[static_cast<std::size_t>(op.group)].ranks.size());
      bytes += kind == OpKind::all_gather ? fsdp2_all_gather_copy_bytes(elements, ranks)
                                          : fsdp2_reduce_scatter_copy_bytes(elements, ranks);
    }
  }
  if (bytes <= 0) return -1;
  const ElementwiseTime t = cost->elementwise_time(bytes);
  // The host floor of a paced unit was measured under FSDP2 with these copies running (they move
  // parameter bytes whatever the tokens), so they cost only what the GPU's wait cannot hold.
  const double hidden = std::min(host_wait, t.seconds);
  host_wait -= hidden;
  return emit({kComputeStream, phase, "fsdp2_copy", "FSDP2 copies, unit " + std::to_string(unit), t.seconds - hidden, -1,
               std::move(deps), std::string(source_class(t.source))});
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
    double forward_wait = unit.forward_host_wait_s;
    const int copy = fsdp2_copy(fwd_[static_cast<std::size_t>(u)], OpKind::all_gather, Phase::forward, u, mine, forward_wait);
    if (copy >= 0) mine = {copy};
    fwd_compute[static_cast<std::size_t>(u)] = emit({kComputeStream, Phase::forward, "forward", "unit " + std::to_string(u),
                                                     unit.forward_s, -1, mine, std::string(source_class(unit.source))});
    ops_[static_cast<std::size_t>(fwd_compute[static_cast<std::size_t>(u)])].host_wait_s = forward_wait;
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
    double backward_wait = units_.units[u].backward_host_wait_s;
    if (t_.reshard_after_forward) {
      const int copy = fsdp2_copy(fwd_[u], OpKind::all_gather, Phase::backward, static_cast<int>(u), mine, backward_wait);
      if (copy >= 0) mine = {copy};
    }
    bwd_compute[u] = emit({kComputeStream, Phase::backward, "backward", "unit " + std::to_string(u), units_.units[u].backward_s, -1,
                           mine, std::string(source_class(units_.units[u].source))});
    // The reductions wait for the gradients' copy-in when FSDP2 makes one.
    const int copy = fsdp2_copy(bwd_[u], OpKind::reduce_scatter, Phase::backward, static_cast<int>(u), {bwd_compute[u]},
                                backward_wait);
    // The reductions' copy-in runs after the unit on the GPU, in the unit's wait: what is left of
    // it once both copies took theirs.
    ops_[static_cast<std::size_t>(bwd_compute[u])].host_wait_s = backward_wait;
    for (const auto& [c, members] : bwd_[u]) collective_op(c, members, {copy >= 0 ? copy : bwd_compute[u]});
  }
}

std::vector<SimOp> RankBuilder::build(int rank, const std::vector<NsTime>& compute) {
  ops_.clear();
  rank_ = list_rank_ = rank;
  move_fold_ = nullptr;
  const auto& plan_ops = plan_.ranks[static_cast<std::size_t>(rank)];
  const auto r = static_cast<std::size_t>(rank);
  if (collecting) {
    classify(rank);
    for (auto* lists : {&fwd_, &bwd_}) {
      for (const auto& list : *lists) collect_edges(list, plan_ops, real_, edges);
    }
    if (classified_.size() <= r) classified_.resize(plan_.ranks.size());
    classified_[r] = {std::move(fwd_), std::move(bwd_), std::move(optimizer_ops_), std::move(real_)};
    return {};
  }
  if (r < classified_.size()) {
    take_classified(r);
  } else {
    classify(rank);
  }
  return emit_rank(compute);
}

void RankBuilder::take_classified(std::size_t r) {
  Classified& c = classified_[r];
  if (keep_classified) {
    fwd_ = c.fwd, bwd_ = c.bwd, optimizer_ops_ = c.optimizer_ops, real_ = c.real;
    return;
  }
  fwd_ = std::move(c.fwd), bwd_ = std::move(c.bwd), optimizer_ops_ = std::move(c.optimizer_ops), real_ = std::move(c.real);
  c = {};
}

std::vector<SimOp> RankBuilder::build_moved(int rank, int template_rank, const ReplicaFold& fold,
                                            const std::vector<NsTime>& compute) {
  const auto t = static_cast<std::size_t>(template_rank);
  if (collecting || !keep_classified || t >= classified_.size()) {
    throw Error("sim: rank " + std::to_string(rank) + " built as rank " + std::to_string(template_rank) +
                "'s list moved before that rank was classified");
  }
  ops_.clear();
  rank_ = rank;
  list_rank_ = template_rank;
  move_fold_ = &fold;
  move_replica_ = plan_.mesh.replica_of(rank);
  take_classified(t);  // a copy: keep_classified
  for (auto* lists : {&fwd_, &bwd_}) {
    for (auto& list : *lists) {
      for (auto& entry : list) entry.first = moved(entry.first);
    }
  }
  std::vector<SimOp> out = emit_rank(compute);
  move_fold_ = nullptr;
  return out;
}

int RankBuilder::moved(int c) const { return move_fold_ ? move_fold_->collective(c, move_replica_) : c; }

// The second pass's ops of the rank classified in fwd_, bwd_ and optimizer_ops_, from the Plan
// list of list_rank_.
std::vector<SimOp> RankBuilder::emit_rank(const std::vector<NsTime>& compute) {
  const int rank = rank_;
  const auto& plan_ops = plan_.ranks[static_cast<std::size_t>(list_rank_)];
  for (auto* lists : {&fwd_, &bwd_}) {
    for (auto& list : *lists) {
      std::stable_sort(list.begin(), list.end(), [&](const auto& x, const auto& y) {
        return positions[static_cast<std::size_t>(x.first)] < positions[static_cast<std::size_t>(y.first)];
      });
      for (std::size_t k = 1; neighbours && k < list.size(); ++k) neighbours->emplace_back(list[k - 1].first, list[k].first);
    }
  }
  sim_of_.assign(plan_ops.size(), -1);
  emit_forward_backward();
  int previous = -1;    // the Plan op emitted last
  int adamw_head = -1;  // the SimOp of the fused AdamW launch being built
  for (int i : optimizer_ops_) {
    const Op& op = plan_ops[static_cast<std::size_t>(i)];
    const bool fused = fuses_with(plan_ops, previous, i);
    previous = i;
    if (is_collective(op.kind)) {
      collective_op(moved(merged_index(rank, op, -1)), {i}, {});
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
    if (op.kind == OpKind::adamw && cost) {
      // The executor builds a fused launch's whole tensor list before launching it: the host
      // time of every tensor joined to the launch delays its head (adamw_fused_issue_us).
      const double host_s = adamw_tensors(op) * cost->adamw_fused_issue_s();
      if (fused && adamw_head >= 0) ops_[static_cast<std::size_t>(adamw_head)].host_s += host_s;
      else s.host_s = host_s, adamw_head = index;
    }
    sim_of_[static_cast<std::size_t>(i)] = index;
    add_plan_deps(s, {i}, index);
    emit(std::move(s));
  }
  if (!as_is_) set_producers();
  for (auto& s : ops_) {
    std::sort(s.deps.begin(), s.deps.end());
    s.deps.erase(std::unique(s.deps.begin(), s.deps.end()), s.deps.end());
  }
  return std::move(ops_);
}

}  // namespace dmuon::sim
