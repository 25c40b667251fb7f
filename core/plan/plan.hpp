// A Plan: one distributed optimizer step (with the forward/backward communication around it)
// as plain data. For every rank, an ordered list of ops: compute ops (momentum, Newton-Schulz,
// Muon update, AdamW) and collectives, each on a stream, with dependencies on earlier ops of
// the same rank. Executors (CPU interpreter, NCCL executor, SimGrid) only execute it.
//
// Data model: every rank owns, per parameter, a flat buffer of each BufferKind (parameter,
// gradient, momentum, Newton-Schulz input and output, AdamW moments). Ops name element ranges
// (Region) of those buffers; a shard is a Region, a whole matrix is a Region.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/cost/mesh.hpp"
#include "core/plan/strategy.hpp"

namespace dmuon {

struct ModelSpec;
struct Routing;

enum class OpKind {
  momentum,       // M, U <- momentum(M, G) over `regions` (U = Newton-Schulz input)
  newton_schulz,  // O <- NS(U) for each of `matrices` (one batched call of same-shape matrices)
  muon_update,    // W <- W (1 - lr wd) - lr_adj O over `regions`
  adamw,          // W, m, v <- AdamW over `regions`
  broadcast,      // root's buffer[regions] -> every member
  reduce,         // sum/avg of members' buffer[regions] -> root
  all_reduce,     // sum/avg of members' buffer[regions] -> every member
  all_gather,     // member i's buffer[parts[i]] -> every member
  reduce_scatter, // sum/avg over members of buffer[parts[i]] -> member i
  all_to_all,     // transfers: src's buffer[from] -> dst's buffer[to]
};
enum class StreamKind { compute, comm };
enum class Phase { forward, backward, optimizer };
enum class BufferKind { param, grad, momentum, ns_input, ns_output, adam_m, adam_v };
enum class ReduceOp { sum, avg };

std::string_view to_string(OpKind k);
std::string_view to_string(StreamKind s);
std::string_view to_string(Phase p);
std::string_view to_string(BufferKind b);
bool is_collective(OpKind k);

// Elements [offset, offset + count) of parameter `param`'s flat (row-major) buffer.
struct Region {
  std::size_t param = 0;
  std::int64_t offset = 0;
  std::int64_t count = 0;
  bool operator==(const Region&) const = default;
};

struct Transfer {
  int src = 0, dst = 0;  // global ranks
  Region from, to;
  bool operator==(const Transfer&) const = default;
};

struct Op {
  OpKind kind = OpKind::momentum;
  StreamKind stream = StreamKind::compute;
  Phase phase = Phase::optimizer;
  std::vector<int> deps;  // indices of earlier ops of the same rank
  std::string label;      // for traces and error messages

  std::vector<std::size_t> matrices;  // newton_schulz: Routing::muon_matrices indices
  std::vector<Region> regions;        // elementwise ops; broadcast/reduce/all_reduce (coalesced)

  int group = -1;                       // collectives: Plan::groups index
  int root = -1;                        // broadcast/reduce: global rank
  ReduceOp reduce_op = ReduceOp::sum;
  BufferKind buffer = BufferKind::param;
  std::vector<Region> parts;            // all_gather/reduce_scatter: member i's part
  std::vector<Transfer> transfers;      // all_to_all
  std::int64_t collective = -1;         // the same id on every member of one collective
  // Collectives of one bucket (same kind and group) travel as one launch: the builder's choice
  // to pay one pipeline fill for several blocks' bytes. A bucketed op is needed by the first
  // block of its bucket (forward) and waits for the last one (backward). -1: not bucketed.
  int bucket = -1;
  // Forward collectives: may run as far ahead of the forward compute as they like instead of
  // FSDP's prefetch depth. owner-striped's broadcasts of the owners' updated matrices: in steady
  // state they are step t's post-step broadcast, running under step t+1's forward, and a block's
  // forward waits only for its own matrices; every GPU then keeps a bf16 replica of them.
  bool run_ahead = false;
  // broadcast: run as a sum all-reduce to which every member but the root contributes -0.0.
  // x + (-0) == x for every x (-0 included) in any order, so every member ends with the root's
  // bits, exactly a broadcast; NCCL may then use its tree (2 log2 R pipeline steps) where its
  // only broadcast algorithm, the ring, pays R - 1 before data flows at the far end.
  bool via_all_reduce = false;
  // Sharded Newton-Schulz (core/plan/ns_sharding.hpp): a newton_schulz op with group >= 0 and one
  // matrix is this member's share of ONE call run jointly by the group's k GPUs (one node):
  // columns [begin, end) of the wide orientation X (m <= n), in group order. Its all-reduces
  // (the squared norm once, then the m x m Gram product X X^T per iteration, or per Gram
  // restart) are inside the op, on the group, with `collective` matching the members as for a
  // collective: they fall between the GEMMs of one iteration, so as separate ops they would
  // need m x m scratch buffers and 3 T + 1 ops a matrix for no decision an executor could use.
  std::int64_t ns_column_begin = 0, ns_column_end = 0;
  // The m x m products of the call split too (issue 13 item 4): this member computes columns
  // [ns_product_begin, ns_product_end) of every m x m product, block i of ns_product_columns for
  // member i; an all-gather gives every member a product it needs whole (Z and R of Gram NS, B of
  // standard NS; Q before a restart and for the result), the others (R Z, Q) stay in blocks.
  // Both 0: not split, every member computes every m x m product whole.
  std::int64_t ns_product_begin = 0, ns_product_end = 0;

  double flops = 0;         // compute ops: useful arithmetic
  double memory_bytes = 0;  // compute ops: bytes read + written in device memory
  double payload_bytes = 0; // collectives: bytes of data this rank contributes or receives
};

// A newton_schulz op shared by a group (Op::ns_column_begin).
bool is_sharded_ns(const Op& op);
// A sharded Newton-Schulz op whose m x m products are split (Op::ns_product_begin).
bool splits_ns_products(const Op& op);
// Ops members of a group meet at: collectives and sharded Newton-Schulz.
bool synchronizes(const Op& op);

struct CommGroup {
  std::string name;  // "world", "shard[r]", "replicate[s]"
  std::vector<int> ranks;
};

struct Plan {
  Strategy strategy = Strategy::dedicated;
  Mesh mesh;
  std::vector<CommGroup> groups;
  std::vector<std::vector<Op>> ranks;  // ops per global rank
  // Owner (global rank) of each Muon matrix's Newton-Schulz; -1 where every holder runs it.
  std::vector<int> matrix_owner;
  int bytes_per_element = 2;  // communication dtype (bf16 params and grads)
  // Every rank (rep, s) runs rank (t, s)'s list moved to replica rep, t = template_of(rep)
  // (core/plan/replica_symmetry.hpp): consumers may build each template replica's part once. Set
  // by build_plan for the data-parallel strategies on several replicas (every template 0) and,
  // for the simulator only, for the owner strategies (replica_template); validate checks it.
  bool replica_symmetric = false;
  // Per replica of a replica-symmetric Plan: the replica whose lists it runs moved, a template
  // (replica_template[t] == t, the first replica of those that run its lists). Empty: replica 0
  // for all (the data-parallel strategies). The owner strategies: every replica that holds an
  // owner's work is its own template, the others run the first of them.
  std::vector<int> replica_template;
  // Of a replica-symmetric Plan, only the template replicas' lists are held (the others empty):
  // rank r runs ranks[template_rank(r)] moved to replica r / shard (ReplicaMove). Only the
  // simulator asks for it (PlanOptions::keep_folded); every other consumer gets every rank's list.
  bool folded = false;
  int template_of(int replica) const {
    return !replica_symmetric ? replica : replica_template.empty() ? 0 : replica_template[static_cast<std::size_t>(replica)];
  }
  // The rank whose list `rank` runs moved (itself when its replica is a template).
  int template_rank(int rank) const { return template_of(mesh.replica_of(rank)) * mesh.shard + mesh.shard_index_of(rank); }

  // Throws dmuon::Error naming rank, op and collective on the first problem: a dependency that
  // is not an earlier op, a Muon matrix without exactly one Newton-Schulz (owner strategies) or
  // updated twice on a rank, an element no rank updates, a collective not matched on every member
  // of its group with equal kind/root/buffer/sizes, members issuing a group's collectives in
  // different orders, a deadlock when every rank runs its list in order, or a Plan marked
  // replica_symmetric whose ranks are not.
  void validate(const ModelSpec& model, const Routing& routing) const;
  std::size_t op_count() const;
};

// Elements the regions cover together.
std::int64_t region_elements(const std::vector<Region>& regions);
// Region of one Muon matrix inside its parameter (an expert's slice of a stack).
Region matrix_region(const Routing& routing, std::size_t matrix);
// Rank s's dim-0 shard of a parameter split over `shards` ranks (FSDP2 layout: ceil(rows/shards)
// rows each, the last ones possibly short or empty).
Region shard_region(const ModelSpec& model, std::size_t param, int shards, int s);

}  // namespace dmuon
