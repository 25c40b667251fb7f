// What one rank of the NCCL executor needs to run its share of a sharded Newton-Schulz op
// (core/plan/ns_sharding.hpp), derived from the Plan alone (no CUDA or NCCL here, so the
// derivation is tested without a GPU): its columns of the wide X, where they lie in the stored
// matrix, and its place in the op's group (its NCCL rank in the group's communicator).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/routing.hpp"
#include "core/plan/plan.hpp"

namespace dmuon::exec {

struct NsShardMember {
  std::size_t matrix = 0;                         // Routing::muon_matrices index
  int position = 0, members = 0;                  // place in the op's group (in group order), group size
  std::int64_t column_begin = 0, column_end = 0;  // of the wide X (m <= n), as the op names them
  long m = 0, columns = 0;                        // X_j is m x columns
  bool split_products = false;                    // computes column block `position` of each m x m product
  // Tall or square stored matrix (ns_shard_by_stored_rows): X = G^T, and X_j is the block of G's
  // rows [begin, end): contiguous, X_j column-major with ld m. Strictly wide: X = G, and X_j is a
  // column block of the row-major G: one run of `columns` elements per row.
  bool column_major = false;
  // X_j in the matrix's flat buffers: `lines` runs of `line_elements`, `pitch_elements` apart,
  // the first at block.offset; `block` spans the first element to the last.
  Region block;
  std::int64_t lines = 1, line_elements = 0, pitch_elements = 0;
  bool contiguous() const { return lines == 1; }
  // The runs as Regions (equal to ns_shard_regions for the same columns).
  std::vector<Region> regions() const;
};

// Rank `rank`'s share of sharded newton_schulz op `op` of `plan`. Throws dmuon::Error starting
// with `where` for an op that is not a sharded call, names no single known Muon matrix, has an
// unknown group or one without `rank`, columns outside [0, n) or empty, or split product columns
// other than ns_product_columns' block for its place.
NsShardMember ns_shard_member(const Op& op, const Plan& plan, int rank, const Routing& routing, const std::string& where);

// Every rank's shares of every sharded call of `plan` checked (ns_shard_member), and the members of
// each call agreeing on splitting its products (a splitting member's all-gathers would meet the
// others' next all-reduce); returns `rank`'s shares by op index. Each process checks all ranks, so
// a bad Plan stops every process alike instead of leaving one waiting in a collective. Throws
// dmuon::Error naming rank, op, label and collective.
std::map<int, NsShardMember> checked_ns_shard_members(const Plan& plan, int rank, const Routing& routing);

}  // namespace dmuon::exec
