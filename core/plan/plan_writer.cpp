#include "core/plan/plan_writer.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace dmuon {

PlanWriter::PlanWriter(Strategy strategy, const ModelSpec& model, const Routing& routing, const Mesh& mesh,
                       bool replica_zero_only, bool keep_folded, std::vector<int> replica_template)
    : model_(model), routing_(routing), keep_folded_(keep_folded) {
  std::vector<int> templates = std::move(replica_template);
  if (replica_zero_only) templates.assign(static_cast<std::size_t>(mesh.replicate), 0);
  if (mesh.replicate < 2) templates.clear();
  if (!templates.empty() && static_cast<int>(templates.size()) != mesh.replicate) {
    throw Error("plan: " + std::to_string(templates.size()) + " replica templates for " + std::to_string(mesh.replicate) + " replicas");
  }
  plan_.strategy = strategy;
  plan_.mesh = mesh;
  plan_.ranks.resize(static_cast<std::size_t>(mesh.world()));
  last_writer_.resize(static_cast<std::size_t>(mesh.world()));
  std::vector<int> all;
  for (int r = 0; r < mesh.world(); ++r) all.push_back(r);
  plan_.groups.push_back({"world", all});
  for (int rep = 0; rep < mesh.replicate; ++rep) {
    plan_.groups.push_back({"shard[" + std::to_string(rep) + "]", mesh.shard_group(rep)});
  }
  for (int s = 0; s < mesh.shard; ++s) {
    plan_.groups.push_back({"replicate[" + std::to_string(s) + "]", mesh.replicate_group(s)});
  }
  if (!templates.empty()) {
    plan_.replica_symmetric = true;  // for ReplicaMove, which reads the templates from the Plan
    if (std::any_of(templates.begin(), templates.end(), [](int t) { return t != 0; })) plan_.replica_template = templates;
    move_.emplace(plan_);
    last_local_.assign(templates.size(), {-1, -1});
  }
}

namespace {

// The buffers an op reads (first `read`) and then writes, without allocating: the writer asks
// once per op and rank.
struct BufferSet {
  BufferKind kinds[kBufferKinds];
  int read = 0, count = 0;
};

BufferSet buffer_set(const Op& op) {
  using B = BufferKind;
  switch (op.kind) {
    case OpKind::momentum: return {{B::grad, B::momentum, B::momentum, B::ns_input}, 2, 4};
    case OpKind::newton_schulz: return {{B::ns_input, B::ns_output}, 1, 2};
    case OpKind::muon_update: return {{B::ns_output, B::param, B::param}, 2, 3};
    case OpKind::adamw: return {{B::grad, B::param, B::adam_m, B::adam_v, B::param, B::adam_m, B::adam_v}, 4, 7};
    default: return {{op.buffer, op.buffer}, 1, 2};
  }
}

void for_each_written(const BufferSet& set, auto&& f) {
  for (int k = set.read; k < set.count; ++k) f(set.kinds[k]);
}

void params_touched_into(const Op& op, const Routing& routing, std::size_t params, std::vector<std::size_t>& out) {
  out.clear();
  // An all-to-all's transfers or a gather's parts mostly name one parameter over and over:
  // skipping a repeat of the previous one keeps the sort short (the result is the same).
  auto add = [&](std::size_t p) {
    if (out.empty() || out.back() != p) out.push_back(p);
  };
  for_each_param(op, routing, add);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (!out.empty() && out.back() >= params) {
    throw Error("plan: op '" + op.label + "' names parameter " + std::to_string(out.back()) + " of a model with " +
                std::to_string(params));
  }
}

}  // namespace

std::vector<BufferKind> buffers_read(const Op& op) {
  const BufferSet set = buffer_set(op);
  return std::vector<BufferKind>(set.kinds, set.kinds + set.read);
}

std::vector<BufferKind> buffers_written(const Op& op) {
  std::vector<BufferKind> out;
  for_each_written(buffer_set(op), [&](BufferKind b) { out.push_back(b); });
  return out;
}

std::vector<std::size_t> params_touched(const Op& op, const Routing& routing) {
  std::vector<std::size_t> out;
  params_touched_into(op, routing, static_cast<std::size_t>(-1), out);
  return out;
}

std::vector<int> PlanWriter::dependencies(int rank, const Op& op) {
  std::vector<int> deps;
  params_touched_into(op, routing_, model_.params.size(), touched_);
  const auto& table = last_writer_[static_cast<std::size_t>(rank)];
  if (table.empty()) return deps;  // nothing written on this rank yet
  const BufferSet set = buffer_set(op);
  for (std::size_t p : touched_) {
    auto add = [&](BufferKind b) {  // reads, and writes too: writes are ordered after writes
      const int w = table[p * kBufferKinds + static_cast<std::size_t>(b)];
      if (w >= 0) deps.push_back(w);
    };
    for (int k = 0; k < set.read; ++k) add(set.kinds[k]);
    for_each_written(set, add);
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  return deps;
}

// Uses touched_ as dependencies() left it for the same op.
void PlanWriter::record_writes(int rank, const Op& op, int index) {
  auto& table = last_writer_[static_cast<std::size_t>(rank)];
  if (table.empty()) table.assign(model_.params.size() * kBufferKinds, -1);
  const BufferSet set = buffer_set(op);
  for (std::size_t p : touched_) {
    for_each_written(set, [&](BufferKind b) { table[p * kBufferKinds + static_cast<std::size_t>(b)] = index; });
  }
}

int PlanWriter::compute(int rank, Op op) {
  if (!writes(rank)) return -1;  // replica-0 mode: finish() moves replica 0's op here
  auto& ops = plan_.ranks[static_cast<std::size_t>(rank)];
  op.stream = StreamKind::compute;
  op.deps = dependencies(rank, op);
  const int index = static_cast<int>(ops.size());
  record_writes(rank, op, index);
  ops.push_back(std::move(op));
  return index;
}

bool PlanWriter::inside_lone_template(const std::vector<int>& ranks) const {
  if (ranks.empty()) return false;
  const int rep = plan_.mesh.replica_of(ranks.front());
  return move_->template_of(rep) == rep && move_->copies_of(rep) == 1 &&
         std::all_of(ranks.begin(), ranks.end(), [&](int r) { return plan_.mesh.replica_of(r) == rep; });
}

int PlanWriter::group_of(const std::vector<int>& ranks, const std::string& name) {
  for (std::size_t g = 0; g < plan_.groups.size(); ++g) {
    if (plan_.groups[g].ranks == ranks) return static_cast<int>(g);
  }
  // move_ knows the groups made above; a folded builder may add only groups inside a template
  // replica that no other replica copies (owner-striped's sharded Newton-Schulz on an owner's node).
  if (move_) {
    if (!inside_lone_template(ranks)) throw Error("plan: group '" + name + "' added while building from template replicas");
  }
  plan_.groups.push_back({name, ranks});
  return static_cast<int>(plan_.groups.size() - 1);
}

void PlanWriter::joint_compute(int group, std::vector<Op> ops) {
  const auto& members = plan_.groups[static_cast<std::size_t>(group)].ranks;
  if (ops.size() != members.size()) throw Error("plan: " + std::to_string(ops.size()) + " joint ops for a group of " + std::to_string(members.size()));
  if (move_) {
    // Only inside a template no other replica copies: a copy would need its own joint call.
    if (!inside_lone_template(members)) throw Error("plan: a joint call (sharded Newton-Schulz) cannot be built from template replicas outside a template of its own");
  }
  const std::int64_t id = next_collective_++;
  for (std::size_t i = 0; i < members.size(); ++i) {
    ops[i].group = group;
    ops[i].collective = id;
    compute(members[i], std::move(ops[i]));
  }
}

void PlanWriter::check_copy(int group, std::int64_t id) const {
  const int rep = plan_.mesh.replica_of(plan_.groups[static_cast<std::size_t>(group)].ranks.front());
  const int t = move_->template_of(rep);
  const auto [last_group, last_id] = last_local_[static_cast<std::size_t>(t)];
  const bool copy = last_group >= 0 && id == last_id + (rep - t) && move_->group(last_group, rep) == group;
  if (!copy) {
    throw Error("plan: collective " + std::to_string(id) + " of group '" + plan_.groups[static_cast<std::size_t>(group)].name +
                "' is not the replica-" + std::to_string(rep) + " copy of the last collective of template replica " +
                std::to_string(t) + ": " + std::string(to_string(plan_.strategy)) + " cannot be built from template replicas");
  }
}

void PlanWriter::collective(int group, Op op) {
  op.group = group;
  op.stream = StreamKind::comm;
  op.collective = next_collective_++;
  const auto& members = plan_.groups[static_cast<std::size_t>(group)].ranks;
  if (move_) {
    if (std::none_of(members.begin(), members.end(), [&](int r) { return writes(r); })) {
      check_copy(group, op.collective);  // finish() moves the template's collective's ops here
      return;
    }
    const int home = move_->home(group);  // groups added later: inside a template alone (group_of)
    if (home >= 0) last_local_[static_cast<std::size_t>(home)] = {group, op.collective};
  }
  for (int rank : members) {
    if (!writes(rank)) continue;
    Op mine = op;
    mine.deps = dependencies(rank, mine);
    auto& ops = plan_.ranks[static_cast<std::size_t>(rank)];
    const int index = static_cast<int>(ops.size());
    record_writes(rank, mine, index);
    ops.push_back(std::move(mine));
  }
}

Plan PlanWriter::finish() {
  if (move_) {
    plan_.replica_symmetric = plan_.folded = true;
    if (!keep_folded_) unfold(plan_);
  }
  return std::move(plan_);
}

// One collective in every shard group over the group's parts of `param` (member s: shard s).
void PlanWriter::on_shard_groups(std::size_t param, OpKind kind, Phase phase, BufferKind buffer, ReduceOp reduce_op) {
  const Mesh& m = plan_.mesh;
  for (int rep = 0; rep < m.replicate; ++rep) {
    Op op;
    op.kind = kind;
    op.phase = phase;
    op.buffer = buffer;
    op.reduce_op = reduce_op;
    op.label = model_.params[param].name;
    for (int s = 0; s < m.shard; ++s) op.parts.push_back(shard_region(model_, param, m.shard, s));
    collective(shard_group(rep), op);
  }
}

void PlanWriter::fsdp_all_gather(std::size_t param) {
  on_shard_groups(param, OpKind::all_gather, Phase::forward, BufferKind::param, ReduceOp::sum);
}

void PlanWriter::fsdp_reduce_gradient(std::size_t param) {
  on_shard_groups(param, OpKind::reduce_scatter, Phase::backward, BufferKind::grad, ReduceOp::avg);
  const Mesh& m = plan_.mesh;
  if (m.replicate == 1) return;
  for (int s = 0; s < m.shard; ++s) {
    Op op;
    op.kind = OpKind::all_reduce;
    op.phase = Phase::backward;
    op.buffer = BufferKind::grad;
    op.reduce_op = ReduceOp::avg;
    op.label = model_.params[param].name;
    op.regions = {shard_region(model_, param, m.shard, s)};
    collective(replicate_group(s), op);
  }
}

void PlanWriter::on_own_shards(OpKind kind, std::size_t param, const std::string& label) {
  for (int r = 0; r < plan_.mesh.world(); ++r) {
    const Region mine = shard(param, r);
    if (mine.count == 0) continue;  // more ranks than rows: this rank holds nothing
    Op op;
    op.kind = kind;
    op.label = label;
    op.regions = {mine};
    compute(r, op);
  }
}

}  // namespace dmuon
