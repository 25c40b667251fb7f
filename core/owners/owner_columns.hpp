// Dedicated owners on a 2-D (replicate x shard) mesh. A matrix's forward broadcast and backward
// reduce cross the replicas inside its owner's replicate group, i.e. over the NIC (rail) of the
// owner's shard index. A layer whose matrices all sit in one shard column sends all its bytes
// over one rail while the node's other NICs idle (the simulator showed one column carrying 3.7x
// its even share on a 16 x 8 cluster). DMuon's LPT keys on this shard-column load too.
#pragma once
#include <string>
#include <vector>

#include "core/cost/mesh.hpp"
#include "core/model/model_spec.hpp"
#include "core/owners/owner_assignment.hpp"

namespace dmuon {

// Two levels. Columns: matrices by bytes, largest first, each to the shard column where its
// layer has the fewest bytes so far (ties: the column with the least NS work), so every layer's
// bytes spread over the rails. Ranks: inside each column, assign_owners over its `replicate`
// ranks with `options` (algorithm, batching, memory). `options.ranks` must equal mesh.world();
// packing is not used (a pack is one column by construction). Returns the assignment over all
// ranks, as evaluate_owners reports it.
Assignment assign_owners_by_column(const ModelSpec& model, const std::vector<MuonMatrix>& matrices,
                                   const BatchCost& cost, const AssignmentOptions& options, const Mesh& mesh);

// Sum over layers of the bytes (2 per element) on the busiest shard column of that layer: the
// serial cross-replica traffic of a dedicated Plan with these owners (global ranks).
double busiest_column_bytes(const ModelSpec& model, const std::vector<MuonMatrix>& matrices,
                            const std::vector<int>& owner_of_matrix, const Mesh& mesh);

}  // namespace dmuon
