#include "core/plan_writer.hpp"

#include <algorithm>

namespace dmuon {

PlanWriter::PlanWriter(Strategy strategy, const ModelSpec& model, const Routing& routing, const Mesh& mesh)
    : model_(model), routing_(routing) {
  plan_.strategy = strategy;
  plan_.mesh = mesh;
  plan_.ranks.resize(static_cast<std::size_t>(mesh.world()));
  std::vector<int> all;
  for (int r = 0; r < mesh.world(); ++r) all.push_back(r);
  plan_.groups.push_back({"world", all});
  for (int rep = 0; rep < mesh.replicate; ++rep) {
    plan_.groups.push_back({"shard[" + std::to_string(rep) + "]", mesh.shard_group(rep)});
  }
  for (int s = 0; s < mesh.shard; ++s) {
    plan_.groups.push_back({"replicate[" + std::to_string(s) + "]", mesh.replicate_group(s)});
  }
}

std::vector<BufferKind> buffers_read(const Op& op) {
  switch (op.kind) {
    case OpKind::momentum: return {BufferKind::grad, BufferKind::momentum};
    case OpKind::newton_schulz: return {BufferKind::ns_input};
    case OpKind::muon_update: return {BufferKind::ns_output, BufferKind::param};
    case OpKind::adamw: return {BufferKind::grad, BufferKind::param, BufferKind::adam_m, BufferKind::adam_v};
    default: return {op.buffer};
  }
}

std::vector<BufferKind> buffers_written(const Op& op) {
  switch (op.kind) {
    case OpKind::momentum: return {BufferKind::momentum, BufferKind::ns_input};
    case OpKind::newton_schulz: return {BufferKind::ns_output};
    case OpKind::muon_update: return {BufferKind::param};
    case OpKind::adamw: return {BufferKind::param, BufferKind::adam_m, BufferKind::adam_v};
    default: return {op.buffer};
  }
}

std::vector<std::size_t> params_touched(const Op& op, const Routing& routing) {
  std::vector<std::size_t> out;
  for (std::size_t m : op.matrices) out.push_back(routing.muon_matrices[m].param);
  for (const Region& r : op.regions) out.push_back(r.param);
  for (const Region& r : op.parts) out.push_back(r.param);
  for (const Transfer& t : op.transfers) out.push_back(t.from.param);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> PlanWriter::dependencies(int rank, const Op& op) const {
  std::vector<int> deps;
  for (std::size_t p : params_touched(op, routing_)) {
    auto kinds = buffers_read(op);
    for (BufferKind b : buffers_written(op)) kinds.push_back(b);  // also order writes after writes
    for (BufferKind b : kinds) {
      auto it = last_writer_.find({rank, p, b});
      if (it != last_writer_.end()) deps.push_back(it->second);
    }
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  return deps;
}

void PlanWriter::record_writes(int rank, const Op& op, int index) {
  for (std::size_t p : params_touched(op, routing_)) {
    for (BufferKind b : buffers_written(op)) last_writer_[{rank, p, b}] = index;
  }
}

int PlanWriter::compute(int rank, Op op) {
  auto& ops = plan_.ranks[static_cast<std::size_t>(rank)];
  op.stream = StreamKind::compute;
  op.deps = dependencies(rank, op);
  const int index = static_cast<int>(ops.size());
  record_writes(rank, op, index);
  ops.push_back(std::move(op));
  return index;
}

void PlanWriter::collective(int group, Op op) {
  op.group = group;
  op.stream = StreamKind::comm;
  op.collective = next_collective_++;
  for (int rank : plan_.groups[static_cast<std::size_t>(group)].ranks) {
    Op mine = op;
    mine.deps = dependencies(rank, mine);
    auto& ops = plan_.ranks[static_cast<std::size_t>(rank)];
    const int index = static_cast<int>(ops.size());
    record_writes(rank, mine, index);
    ops.push_back(std::move(mine));
  }
}

void PlanWriter::fsdp_all_gather(std::size_t param) {
  const Mesh& m = plan_.mesh;
  for (int rep = 0; rep < m.replicate; ++rep) {
    Op op;
    op.kind = OpKind::all_gather;
    op.phase = Phase::forward;
    op.buffer = BufferKind::param;
    op.label = model_.params[param].name;
    for (int s = 0; s < m.shard; ++s) op.parts.push_back(shard_region(model_, param, m.shard, s));
    collective(shard_group(rep), op);
  }
}

void PlanWriter::fsdp_reduce_gradient(std::size_t param) {
  const Mesh& m = plan_.mesh;
  for (int rep = 0; rep < m.replicate; ++rep) {
    Op op;
    op.kind = OpKind::reduce_scatter;
    op.phase = Phase::backward;
    op.buffer = BufferKind::grad;
    op.reduce_op = ReduceOp::avg;
    op.label = model_.params[param].name;
    for (int s = 0; s < m.shard; ++s) op.parts.push_back(shard_region(model_, param, m.shard, s));
    collective(shard_group(rep), op);
  }
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
