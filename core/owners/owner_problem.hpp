// Internal to owner assignment: the instance (units, per-shape batch costs) and per-rank loads
// that the algorithms in owner_assignment.cpp, owner_refine.cpp and owner_exact.cpp share.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/owners/owner_assignment.hpp"

namespace dmuon::owner_detail {

// Time of n matrices of one shape on one rank: floor(n / batch) full batches plus the rest.
struct ShapeCost {
  long rows = 0, cols = 0;
  int batch = 1;                       // max_batch, or 1 without batching
  std::vector<double> batch_seconds;   // [0..batch], batch_seconds[0] = 0
  double seconds(std::int64_t n) const {
    return double(n / batch) * batch_seconds[batch] + batch_seconds[n % batch];
  }
  double best_seconds_per_matrix = 0;  // min over b of t(b) / b
  bool monotone = true;                // t(b) nondecreasing: adding a matrix never lowers a load
};

// What gets one owner: a standalone matrix, or a layer's pack of small matrices.
struct Unit {
  std::vector<std::size_t> matrices;
  std::vector<std::pair<int, int>> shape_counts;  // (shape index, matrices of it), sorted
  double bytes = 0;
  double seconds = 0;  // alone on an empty rank
  double flops = 0;    // standard-NS flops per step, round_robin's sort key
  int type = 0;        // units of one type are interchangeable (same shapes and bytes)
  std::string label;   // "matrix 'name'" or "pack of k matrices of layer L ('name', ...)"
};

struct Problem {
  int ranks = 1;
  std::vector<double> capacity_bytes;  // per rank, +inf when unlimited
  std::vector<double> base_seconds;    // per rank: AssignmentOptions::base_load_seconds, or zeros
  std::vector<double> base_collective_seconds;  // per rank: of which collectives, or zeros
  std::vector<ShapeCost> shapes;
  std::vector<int> shape_of_matrix;
  std::vector<Unit> units;
  int types = 0;
  bool monotone = true;  // every shape's cost is monotone: the exact solver's bounds hold
};

// Throws dmuon::Error for bad options or a cost that is negative or not finite.
Problem build_problem(const std::vector<MuonMatrix>& matrices, const BatchCost& cost,
                      const AssignmentOptions& options, bool pack);

// Per-rank matrix counts by shape, and the loads and memory they imply.
class RankLoads {
 public:
  explicit RankLoads(const Problem& problem);
  double load(int rank) const { return load_[rank]; }
  // The rank's compute: its load less the sharded calls' collectives in its base.
  double compute(int rank) const { return load_[rank] - problem_->base_collective_seconds[rank]; }
  double memory(int rank) const { return memory_[rank]; }
  int unit_count(int rank) const { return units_[rank]; }
  // Load of `rank` after giving away `out` and taking `in` (either may be null).
  double load_with(int rank, const Unit* out, const Unit* in) const;
  bool fits(int rank, const Unit* out, const Unit* in) const;
  void add(int rank, const Unit& unit);
  void remove(int rank, const Unit& unit);

 private:
  void reprice_rank(int rank);

  const Problem* problem_;
  std::vector<std::vector<std::int64_t>> count_;  // [rank][shape]
  std::vector<double> load_, memory_;
  std::vector<int> units_;
};

// Fills the makespans and means of a's load_seconds and compute_seconds.
void summarize_loads(Assignment& a);

std::vector<int> owners_round_robin(const Problem& problem);
std::vector<int> owners_lpt(const Problem& problem);
// Local search from `unit_owner` (owner_refine.cpp).
void refine_owners(const Problem& problem, std::vector<int>& unit_owner);
// Branch and bound from the incumbent `unit_owner`; true when the search finished, i.e. the
// result is optimal (owner_exact.cpp).
bool solve_owners_exact(const Problem& problem, std::vector<int>& unit_owner);

// "owner assignment: no rank has room for ..." when a unit fits nowhere at this point.
[[noreturn]] void fail_no_room(const Problem& problem, const RankLoads& loads, const Unit& unit,
                               std::size_t placed);

}  // namespace dmuon::owner_detail
