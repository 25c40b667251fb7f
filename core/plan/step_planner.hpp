// From a scenario's pieces to the Plan an executor runs: owners for the strategies that have
// them (balanced by the cost model), the strategy's builder, and the cost annotations. The one
// path the CPU interpreter, the NCCL executor and the simulator all take, so they run the same
// Plan for the same inputs.
#pragma once
#include <cstdint>
#include <optional>

#include "core/cost/calibration.hpp"
#include "core/cost/mesh.hpp"
#include "core/plan/ns_sharding.hpp"
#include "core/optimizer/optimizer_config.hpp"
#include "core/owners/owner_assignment.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/plan_builders.hpp"
#include "core/model/routing.hpp"
#include "core/io/scenario.hpp"

namespace dmuon {

struct StepPlanOptions {
  OwnerAlgorithm owner_algorithm = OwnerAlgorithm::refined;
  PlanOptions plan;  // buckets, chunks, max_batch (also the owner assignment's batch limit)
  // DMuon packs a layer's matrices below this many elements into one owner unit (dedicated
  // only): one coalesced broadcast and reduce per layer instead of one per owner of each matrix.
  std::int64_t pack_numel_threshold = 5'000'000;
  // Packing can leave too few units for the ranks (a 3B model's ~70 layer packs over 128 GPUs:
  // the largest pack sets the makespan). The packs are kept while their NS makespan is within
  // this fraction of the unpacked assignment's; beyond it, every matrix is its own unit.
  double pack_max_slowdown = 0.05;
  // dedicated on a 2-D mesh: spread each layer's bytes over the shard columns (rails) first,
  // then balance NS time inside each column (core/owners/owner_columns.hpp). No packing then.
  bool balance_shard_columns = true;
  // owner-striped: share the Newton-Schulz of matrices that take longer than a GPU's fair share
  // among GPUs of their owner's node (core/owners/owner_sharded.hpp), priced with `node_link` for the
  // all-reduces. Off unless node_link.bw_GBps > 0: only callers that price a node's links (the
  // simulator from a scenario; dmuon-verify --backend nccl's sharded case) turn it on.
  bool sharded_ns = true;
  // Whether sharded calls also split their m x m products (Op::ns_product_begin).
  ProductSplit split_ns_products = ProductSplit::cheaper;
  NodeLink node_link;
  // Bytes each rank may hold as a dedicated owner; none = unlimited.
  std::optional<double> owner_memory_capacity_bytes;
  // owner-striped's run-ahead broadcasts leave a bf16 replica of every Muon matrix on every GPU
  // (core/cost/memory_model). With a limit, a Plan whose replica would not fit while the same Plan
  // without run-ahead does is planned without it, and StepPlan::note says so. None: no limit.
  struct MemoryLimit {
    TrainingSpec training;  // the memory model's activations
    double gpu_memory_GiB = 0;
  };
  std::optional<MemoryLimit> memory_limit;
  // false: plan_step leaves Plan::validate to its caller, which must run it before using the
  // Plan's results (the simulator runs it on its second core beside building its step program).
  bool validate = true;
};

// The planner knobs a scenario sets (its `planner:` section) and the node's NVLink (per
// direction, after efficiency) that prices sharded Newton-Schulz: what dmuon-sim and
// dmuon-bench step both plan with, so that both run the same Plan for one scenario.
StepPlanOptions plan_options_for(const Scenario& scenario);

struct StepPlan {
  Strategy strategy = Strategy::dedicated;
  Mesh mesh;
  Plan plan;
  // dedicated: over all ranks; zero1-a2a: over the shard indices of one replica. Empty otherwise.
  std::optional<Assignment> assignment;
  std::string note;  // a planner decision the user should know of (empty: none)
};

// One node: a 1-D mesh of its GPUs. Several nodes: HSDP, replicate = nodes, shard = GPUs per
// node (FSDP inside a node over NVLink, replicas across the network). Throws dmuon::Error naming
// cluster.nodes or cluster.gpus_per_node when a size is not positive or too large.
Mesh mesh_for_cluster(const ClusterSpec& cluster);

// Builds, validates and annotates the Plan of `strategy`. Throws dmuon::Error (a Muon strategy
// on a model without Muon matrices, naming `strategies`; owner assignment errors such as a
// matrix that fits no rank's memory; plan validation errors).
StepPlan plan_step(const ModelSpec& model, const Routing& routing, const OptimizerConfig& optimizer,
                   Strategy strategy, const Mesh& mesh, const CostModel& cost, const StepPlanOptions& options = {});

}  // namespace dmuon
