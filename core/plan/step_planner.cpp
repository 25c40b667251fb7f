#include "core/plan/step_planner.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "core/cost/memory_model.hpp"
#include "core/owners/owner_columns.hpp"
#include "core/owners/owner_sharded.hpp"
#include "core/cost/plan_cost.hpp"

namespace dmuon {
namespace {

// owner-striped with sharded Newton-Schulz: owners and shard counts when the cost model shards
// at least one matrix; none when it shards nothing (the plain assignment then stands).
std::optional<ShardedAssignment> sharded_owners(const Routing& routing, const OptimizerConfig& optimizer, const Mesh& mesh,
                                                const CostModel& cost, const AssignmentOptions& a,
                                                const StepPlanOptions& options) {
  if (!options.sharded_ns || !(options.node_link.bw_GBps > 0) || mesh.shard < 2) return std::nullopt;
  const NsConfig ns = optimizer.muon.ns;
  const NodeLink link = options.node_link;
  const ProductSplit split = options.split_ns_products;
  // A member runs momentum and update over its own columns (ns_shard_regions), as an owner does
  // over a whole matrix (owner_batch_cost).
  const ShardedCost member = [&cost, ns, link, split](long rows, long cols, int k) {
    const NsShardChoice c = best_sharded_ns(cost, ns, rows, cols, k, link, split);
    const std::int64_t n = std::max(rows, cols);
    const double elementwise = owner_elementwise_seconds(cost, double(std::min(rows, cols)) * double((n + k - 1) / k));
    return MemberSeconds{c.seconds + elementwise, c.compute_seconds + elementwise};
  };
  ShardedAssignment s = assign_owners_sharded(routing.muon_matrices, owner_batch_cost(cost, ns), member, a, mesh);
  if (std::all_of(s.shards.begin(), s.shards.end(), [](int k) { return k == 1; })) return std::nullopt;
  // The assignment priced each call at its cheaper form; the Plan runs that form.
  s.split_products.assign(s.shards.size(), false);
  for (std::size_t m = 0; m < s.shards.size(); ++m) {
    const MuonMatrix& mm = routing.muon_matrices[m];
    if (s.shards[m] > 1) s.split_products[m] = best_sharded_ns(cost, ns, mm.rows, mm.cols, s.shards[m], link, split).split;
  }
  return s;
}

int checked_int(std::int64_t value, const std::string& key) {
  if (value < 1 || value > std::numeric_limits<int>::max()) {
    throw Error(key + ": must be in [1, " + std::to_string(std::numeric_limits<int>::max()) + "], got " +
                std::to_string(value));
  }
  return static_cast<int>(value);
}

}  // namespace

StepPlanOptions plan_options_for(const Scenario& scenario) {
  StepPlanOptions o;
  const PlannerSpec& p = scenario.planner;
  if (p.striped_bucket_bytes_per_rail) o.plan.striped_bucket_bytes_per_rail = *p.striped_bucket_bytes_per_rail;
  if (p.striped_run_ahead) o.plan.striped_run_ahead = *p.striped_run_ahead;
  if (p.striped_all_reduce_from_nodes) o.plan.striped_all_reduce_from_nodes = *p.striped_all_reduce_from_nodes;
  if (p.sharded_ns) o.sharded_ns = *p.sharded_ns;
  if (p.split_ns_products) o.split_ns_products = *p.split_ns_products;
  if (const auto& nvlink = scenario.cluster.nvlink) o.node_link = {nvlink->bw_GBps * nvlink->efficiency, nvlink->latency_us};
  return o;
}

Mesh mesh_for_cluster(const ClusterSpec& cluster) {
  const int nodes = checked_int(cluster.nodes, "cluster.nodes");
  const int gpus = checked_int(cluster.gpus_per_node, "cluster.gpus_per_node");
  return make_mesh(nodes, gpus, "cluster");
}

StepPlan plan_step(const ModelSpec& model, const Routing& routing, const OptimizerConfig& optimizer,
                   Strategy strategy, const Mesh& mesh, const CostModel& cost, const StepPlanOptions& options) {
  if (strategy != Strategy::adamw && routing.muon_matrices.empty()) {
    throw Error("strategies: '" + std::string(to_string(strategy)) + "' runs Muon, but the routing sends every parameter of model '" +
                model.name + "' to AdamW (no Muon matrix): use strategy adamw or route matrices to Muon");
  }
  StepPlan out;
  out.strategy = strategy;
  out.mesh = mesh;
  std::vector<int> owner;
  const StrategyTraits t = traits(strategy);
  if (t.has_owners()) {
    AssignmentOptions a;
    a.ranks = t.ns_ranks == NsRanks::owner ? mesh.world() : mesh.shard;
    a.algorithm = options.owner_algorithm;
    a.max_batch = options.plan.max_batch;
    // zero1-a2a owners hold a gathered matrix only while it is orthogonalized: no packing (the
    // all-to-all already moves each matrix separately) and no standing memory.
    a.pack_numel_threshold = t.owner_keeps_matrix ? options.pack_numel_threshold : 0;
    if (t.owner_keeps_matrix && options.owner_memory_capacity_bytes) {
      a.memory_capacity_bytes.assign(static_cast<std::size_t>(a.ranks), *options.owner_memory_capacity_bytes);
    }
    // owner-striped's owners also run their matrices' momentum and update (owner_pipeline.cpp),
    // as much as the matrix is large, and its sharded assignment counts them (sharded_owners):
    // the two assignments it compares count alike. (dedicated's owners run them too; its
    // assignment still balances Newton-Schulz alone.)
    const BatchCost ns_cost = t.rail_striped ? owner_batch_cost(cost, optimizer.muon.ns) : ns_batch_cost(cost, optimizer.muon.ns);
    // Striped collectives cross the network on every rail whoever owns a matrix: balancing
    // the shard columns would only constrain the NS balance.
    if (t.owner_keeps_matrix && !t.rail_striped && mesh.replicate > 1 && mesh.shard > 1 && options.balance_shard_columns) {
      out.assignment = assign_owners_by_column(model, routing.muon_matrices, ns_cost, a, mesh);
    } else {
      out.assignment = assign_owners(routing.muon_matrices, ns_cost, a);
    }
    // Packing a layer's small matrices saves broadcasts, but when it leaves too few units for
    // the ranks (a 3B model's ~70 layer packs over 128 GPUs) the largest pack sets the makespan.
    // Keep packing unless unpacked owners finish Newton-Schulz sooner by more than the allowance.
    if (a.pack_numel_threshold > 0 && out.assignment->units < static_cast<int>(routing.muon_matrices.size())) {
      AssignmentOptions unpacked = a;
      unpacked.pack_numel_threshold = 0;
      Assignment alternative = assign_owners(routing.muon_matrices, ns_cost, unpacked);
      if (out.assignment->makespan_seconds > (1 + options.pack_max_slowdown) * alternative.makespan_seconds) {
        out.assignment = std::move(alternative);
      }
    }
    owner = out.assignment->owner_of_matrix;
  }
  PlanOptions plan_options = options.plan;
  if (t.rail_striped) {
    AssignmentOptions a;
    a.ranks = mesh.world();
    a.algorithm = options.owner_algorithm;
    a.max_batch = options.plan.max_batch;
    if (options.owner_memory_capacity_bytes) {
      a.memory_capacity_bytes.assign(static_cast<std::size_t>(a.ranks), *options.owner_memory_capacity_bytes);
    }
    // Sharding only where it lowers the makespan of the assignment above.
    auto s = sharded_owners(routing, optimizer, mesh, cost, a, options);
    if (s && s->assignment.makespan_seconds < out.assignment->makespan_seconds) {
      out.assignment = std::move(s->assignment);
      owner = out.assignment->owner_of_matrix;
      plan_options.ns_shards = std::move(s->shards);
      plan_options.ns_split_products = std::move(s->split_products);
    }
  }
  out.plan = build_plan(strategy, model, routing, mesh, owner, plan_options);
  if (options.memory_limit && t.rail_striped && options.plan.striped_run_ahead) {
    const auto& limit = *options.memory_limit;
    const MemoryBreakdown with = memory_per_gpu(out.plan, model, routing, limit.training);
    if (!with.fits(limit.gpu_memory_GiB)) {
      PlanOptions without_run_ahead = plan_options;
      without_run_ahead.striped_run_ahead = false;
      Plan other = build_plan(strategy, model, routing, mesh, owner, without_run_ahead);
      const MemoryBreakdown without = memory_per_gpu(other, model, routing, limit.training);
      if (without.fits(limit.gpu_memory_GiB)) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "run-ahead off: with it a GPU needs %.1f GiB (a bf16 replica of every Muon matrix), over "
                      "cluster.gpu_memory_GiB %.4g; without it %.1f GiB",
                      with.total_GiB(), limit.gpu_memory_GiB, without.total_GiB());
        out.note = buf;
        out.plan = std::move(other);
      }
    }
  }
  if (options.validate) out.plan.validate(model, routing);
  annotate_plan(out.plan, model, routing, optimizer);
  return out;
}

}  // namespace dmuon
