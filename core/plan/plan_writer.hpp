// Helper the strategy builders share: appends ops, numbers collectives, tracks which op last
// wrote each (rank, parameter, buffer) so dependencies are derived rather than hand-written,
// and emits the FSDP2 pieces (all-gather, reduce-scatter) several strategies reuse.
#pragma once
#include <optional>
#include <vector>

#include "core/model/model_spec.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/replica_symmetry.hpp"
#include "core/model/routing.hpp"

namespace dmuon {

class PlanWriter {
 public:
  // `replica_zero_only` (a replica-symmetric strategy, core/plan/replica_symmetry.hpp): ops of
  // ranks outside replica 0 are not written; finish() moves replica 0's lists to them. Collective
  // ids are numbered as when every rank is written, and a collective of another replica's group
  // must be the copy of the last one written for replica 0 (the builders' order), else
  // dmuon::Error.
  // `replica_template` (Plan::replica_template; the owner strategies) does the same with
  // templates: only template replicas are written, and a collective of another replica's group
  // must be the copy of the last one written for its template.
  // With `keep_folded` the Plan stays folded (Plan::folded) instead.
  PlanWriter(Strategy strategy, const ModelSpec& model, const Routing& routing, const Mesh& mesh,
             bool replica_zero_only = false, bool keep_folded = false, std::vector<int> replica_template = {});

  const ModelSpec& model() const { return model_; }
  const Routing& routing() const { return routing_; }
  const Mesh& mesh() const { return plan_.mesh; }

  int world_group() const { return 0; }
  int shard_group(int replica) const { return 1 + replica; }
  int replicate_group(int shard_index) const { return 1 + plan_.mesh.replicate + shard_index; }

  // A compute op on one rank; its dependencies are the last writers of what it reads.
  int compute(int rank, Op op);
  // The same collective on every member of `group` (id, group and stream filled in).
  void collective(int group, Op op);

  // The group of exactly `ranks` in this order, added under `name` on first use.
  int group_of(const std::vector<int>& ranks, const std::string& name);
  // One compute op per member of `group` (member i runs ops[i]) sharing one collective id:
  // a sharded Newton-Schulz call, whose members meet as a collective's do.
  void joint_compute(int group, std::vector<Op> ops);

  // FSDP2 pieces for one parameter, for every shard group: all-gather of the parameter
  // (forward) and reduce-scatter (avg) of the gradient plus, on a 2-D mesh, all-reduce (avg) of
  // each shard across replicas (backward).
  void fsdp_all_gather(std::size_t param);
  void fsdp_reduce_gradient(std::size_t param);
  void on_shard_groups(std::size_t param, OpKind kind, Phase phase, BufferKind buffer, ReduceOp reduce_op);
  // Elementwise optimizer op over each rank's own shard of `param`.
  void on_own_shards(OpKind kind, std::size_t param, const std::string& label);

  Region shard(std::size_t param, int rank) const {
    return shard_region(model_, param, plan_.mesh.shard, plan_.mesh.shard_index_of(rank));
  }

  Plan finish();
  Plan& plan() { return plan_; }

 private:
  // Fills touched_ with the op's parameters; returns its dependencies on `rank`.
  std::vector<int> dependencies(int rank, const Op& op);
  void record_writes(int rank, const Op& op, int index);

  // Whether `rank` is written (folded: only the template replicas' ranks).
  bool writes(int rank) const {
    return !move_ || move_->template_of(plan_.mesh.replica_of(rank)) == plan_.mesh.replica_of(rank);
  }
  // Folded: checks that a collective of `group` (inside a replica that is no template) numbered
  // `id` is the copy of the last collective written of a group inside its template.
  void check_copy(int group, std::int64_t id) const;
  // Folded: whether the ranks lie inside one template replica that stands for itself alone.
  bool inside_lone_template(const std::vector<int>& ranks) const;

  const ModelSpec& model_;
  const Routing& routing_;
  Plan plan_;
  bool keep_folded_ = false;
  std::int64_t next_collective_ = 0;
  // Folded: each replica's template and which groups lie inside a template replica; unset:
  // every rank written.
  std::optional<ReplicaMove> move_;
  // Folded: per template replica, group and id of the last collective written of a group inside it.
  std::vector<std::pair<int, std::int64_t>> last_local_;
  // Last writer (op index) of each (rank, parameter, buffer): last_writer_[rank][param *
  // kBufferKinds + buffer], -1 = none yet; a rank's table is sized on its first write. A flat
  // table instead of a map of tuples: the builders ask it once per op and rank (millions of
  // times at 1,024 GPUs).
  std::vector<std::vector<int>> last_writer_;
  std::vector<std::size_t> touched_;  // scratch: the parameters of the op being added
};

inline constexpr int kBufferKinds = static_cast<int>(BufferKind::adam_v) + 1;  // BufferKind's values

// Buffers an op reads and writes (for dependency tracking and executors).
std::vector<BufferKind> buffers_read(const Op& op);
std::vector<BufferKind> buffers_written(const Op& op);
// Parameters an op touches.
std::vector<std::size_t> params_touched(const Op& op, const Routing& routing);
// Calls f(param) for every parameter the op touches, in the op's order with repeats and without
// allocating: for callers that visit every op of every rank (params_touched sorts this). A
// transfer moves a region within one parameter (its `to` names the same one as its `from`).
template <class F>
void for_each_param(const Op& op, const Routing& routing, F&& f) {
  for (std::size_t m : op.matrices) f(routing.muon_matrices[m].param);
  for (const Region& r : op.regions) f(r.param);
  for (const Region& r : op.parts) f(r.param);
  for (const Transfer& t : op.transfers) f(t.from.param);
}

}  // namespace dmuon
