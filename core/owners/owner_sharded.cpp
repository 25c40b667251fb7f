#include "core/owners/owner_sharded.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

#include "core/error.hpp"
#include "core/owners/owner_problem.hpp"
#include "core/plan/ns_sharding.hpp"

namespace dmuon {
namespace {

// The k for one matrix (1: not sharded), by the rule in the header.
int choose_shards(const MuonMatrix& m, const ShardedCost& sharded, double alone, double fair, int max_k) {
  if (alone <= fair) return 1;
  int best = 1;
  double best_seconds = alone;
  for (int k = 2; k <= max_k; ++k) {
    if (!ns_shardable(ns_wide_columns(m), k)) continue;
    const double t = sharded(m.rows, m.cols, k);
    if (t <= fair) return k;
    if (t < best_seconds) best = k, best_seconds = t;
  }
  return best;
}

// Places one sharded call: the window of k consecutive GPUs of one node whose busiest member
// is least loaded (ties: the least total). Returns its first rank.
int place_window(std::vector<double>& load, const Mesh& mesh, int k, double seconds) {
  int best = -1;
  double best_max = 0, best_sum = 0;
  for (int node = 0; node < mesh.replicate; ++node) {
    for (int pos = 0; pos + k <= mesh.shard; ++pos) {
      const int first = mesh.rank(node, pos);
      double most = 0, sum = 0;
      for (int j = 0; j < k; ++j) most = std::max(most, load[first + j]), sum += load[first + j];
      if (best < 0 || most < best_max || (most == best_max && sum < best_sum)) best = first, best_max = most, best_sum = sum;
    }
  }
  for (int j = 0; j < k; ++j) load[best + j] += seconds;
  return best;
}

// Every matrix's k with k at most max_k.
std::vector<int> shards_up_to(const std::vector<MuonMatrix>& matrices, const ShardedCost& sharded,
                              const std::vector<double>& alone, int ranks, int max_k) {
  const double fair = std::accumulate(alone.begin(), alone.end(), 0.0) / ranks;
  std::vector<int> out(matrices.size(), 1);
  for (std::size_t i = 0; i < matrices.size(); ++i) out[i] = choose_shards(matrices[i], sharded, alone[i], fair, max_k);
  return out;
}

// Owners for given shard counts: sharded calls on node windows first, then the rest.
ShardedAssignment attempt(const std::vector<MuonMatrix>& matrices, const BatchCost& cost, const ShardedCost& sharded,
                          const AssignmentOptions& options, const Mesh& mesh, std::vector<int> shards) {
  ShardedAssignment out;
  out.shards = std::move(shards);
  std::vector<std::size_t> split;
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    if (out.shards[i] > 1) split.push_back(i);
  }
  std::stable_sort(split.begin(), split.end(), [&](std::size_t a, std::size_t b) {
    return sharded(matrices[a].rows, matrices[a].cols, out.shards[a]) * out.shards[a] >
           sharded(matrices[b].rows, matrices[b].cols, out.shards[b]) * out.shards[b];
  });
  std::vector<double> base(static_cast<std::size_t>(options.ranks), 0.0);
  std::vector<int> owner(matrices.size(), -1);
  for (std::size_t i : split) {
    owner[i] = place_window(base, mesh, out.shards[i], sharded(matrices[i].rows, matrices[i].cols, out.shards[i]));
  }
  std::vector<MuonMatrix> rest;
  std::vector<std::size_t> rest_index;
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    if (out.shards[i] == 1) rest.push_back(matrices[i]), rest_index.push_back(i);
  }
  AssignmentOptions a = options;
  a.pack_numel_threshold = 0;
  a.base_load_seconds = base;
  Assignment whole = rest.empty() ? Assignment{} : assign_owners(rest, cost, a);
  for (std::size_t j = 0; j < rest.size(); ++j) owner[rest_index[j]] = whole.owner_of_matrix[j];
  for (auto& rank_batches : whole.batches) {  // indices into `rest` -> into `matrices`
    for (NsBatch& b : rank_batches) {
      for (std::size_t& i : b.matrices) i = rest_index[i];
    }
  }
  out.assignment = std::move(whole);
  Assignment& r = out.assignment;
  r.owner_of_matrix = owner;
  if (rest.empty()) r.load_seconds = base, r.units = 0;
  r.units += static_cast<int>(split.size());
  r.makespan_seconds = *std::max_element(r.load_seconds.begin(), r.load_seconds.end());
  r.mean_seconds = std::accumulate(r.load_seconds.begin(), r.load_seconds.end(), 0.0) / options.ranks;
  r.proven_optimal = false;
  return out;
}

// What no assignment of these matrices can beat, sharded or not: the work of every matrix at
// its shape's best batched rate spread over the ranks (sharding only adds work, since each of
// k members runs the whole m x m part), and each matrix's least time on one GPU over every k it
// may be sharded over (its m x m part and all-reduces stay whatever k is). The second holds
// only when adding a matrix never lowers a load (Problem::monotone), as in summarize().
// Without it, Assignment::lower_bound_seconds of the sharded assignment came from the whole
// matrices alone and a makespan set by a sharded call's floor read as a gap to close.
double sharded_lower_bound(const std::vector<MuonMatrix>& matrices, const BatchCost& cost, const ShardedCost& sharded,
                           const AssignmentOptions& options, const Mesh& mesh, const std::vector<double>& alone) {
  AssignmentOptions plain = options;
  plain.pack_numel_threshold = 0;
  plain.base_load_seconds.clear();
  const owner_detail::Problem p = owner_detail::build_problem(matrices, cost, plain, false);
  double volume = 0;
  for (std::size_t i = 0; i < matrices.size(); ++i) volume += p.shapes[p.shape_of_matrix[i]].best_seconds_per_matrix;
  double bound = volume / options.ranks;
  if (!p.monotone) return bound;
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    double least = alone[i];
    for (int k = 2; k <= mesh.shard; ++k) {
      if (ns_shardable(ns_wide_columns(matrices[i]), k)) least = std::min(least, sharded(matrices[i].rows, matrices[i].cols, k));
    }
    bound = std::max(bound, least);
  }
  return bound;
}

}  // namespace

ShardedAssignment assign_owners_sharded(const std::vector<MuonMatrix>& matrices, const BatchCost& cost,
                                        const ShardedCost& sharded, const AssignmentOptions& options, const Mesh& mesh) {
  if (options.ranks != mesh.world()) {
    throw Error("owner assignment: " + std::to_string(options.ranks) + " ranks for a mesh of " + std::to_string(mesh.world()));
  }
  std::vector<double> alone(matrices.size());
  for (std::size_t i = 0; i < matrices.size(); ++i) alone[i] = cost(matrices[i].rows, matrices[i].cols, 1);
  // Sharding a matrix adds its m x m work to every member: with few GPUs per large matrix the
  // greedy rule can oversplit, so each cap on k is tried and the least makespan kept.
  // A cap that changes no matrix's k gives the same assignment: only new shard counts are tried.
  std::optional<ShardedAssignment> best;
  std::vector<int> previous;
  for (int max_k = 2; max_k <= mesh.shard; ++max_k) {
    std::vector<int> shards = shards_up_to(matrices, sharded, alone, options.ranks, max_k);
    if (shards == previous) continue;
    previous = shards;
    ShardedAssignment a = attempt(matrices, cost, sharded, options, mesh, std::move(shards));
    if (!best || a.assignment.makespan_seconds < best->assignment.makespan_seconds) best = std::move(a);
  }
  if (!best) best = attempt(matrices, cost, sharded, options, mesh, std::vector<int>(matrices.size(), 1));
  best->assignment.lower_bound_seconds = sharded_lower_bound(matrices, cost, sharded, options, mesh, alone);
  return std::move(*best);
}

}  // namespace dmuon
