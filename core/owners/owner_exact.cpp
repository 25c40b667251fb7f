// Branch and bound over owners for small instances: the optimal makespan, or the incumbent
// proven optimal. Depth-first in decreasing unit time, so good assignments are found early.
#include <algorithm>
#include <limits>
#include <numeric>

#include "core/owners/owner_problem.hpp"

namespace dmuon::owner_detail {
namespace {

// A search that has not finished by then gives up and keeps its best (not proven) answer; at
// 12 units it finishes far sooner in every instance we tried.
constexpr long kMaxNodes = 20'000'000;
constexpr double kRelativeGain = 1e-12;

// The least a unit can add to any rank's load, over every count the rank may already hold of
// its shapes (the increase repeats with period `batch`).
double least_increase(const Problem& p, const Unit& u) {
  double total = 0;
  for (const auto& [s, c] : u.shape_counts) {
    const auto& shape = p.shapes[s];
    double least = std::numeric_limits<double>::infinity();
    for (int n = 0; n < shape.batch; ++n) least = std::min(least, shape.seconds(n + c) - shape.seconds(n));
    total += least;
  }
  return total;
}

class BranchAndBound {
 public:
  BranchAndBound(const Problem& p, std::vector<int>& best_owner) : p_(p), best_owner_(best_owner), loads_(p) {
    order_.resize(p.units.size());
    std::iota(order_.begin(), order_.end(), 0);
    // Decreasing time; equal units side by side so the symmetry rule below can see them.
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
      const Unit &x = p.units[a], &y = p.units[b];
      return x.seconds != y.seconds ? x.seconds > y.seconds : x.type < y.type;
    });
    rest_increase_.assign(order_.size() + 1, 0.0);
    for (std::size_t k = order_.size(); k-- > 0;) {
      rest_increase_[k] = rest_increase_[k + 1] + least_increase(p, p.units[order_[k]]);
    }
    RankLoads incumbent(p);
    for (std::size_t u = 0; u < p.units.size(); ++u) incumbent.add(best_owner[u], p.units[u]);
    for (int r = 0; r < p.ranks; ++r) best_makespan_ = std::max(best_makespan_, incumbent.load(r));
    owner_.assign(p.units.size(), -1);
  }

  bool run() {
    search(0, 0.0);
    return nodes_ <= kMaxNodes;
  }

 private:
  // Valid because loads only grow as units are added (Problem::monotone).
  double lower_bound(std::size_t k, double max_load) const {
    double sum = 0;
    for (int r = 0; r < p_.ranks; ++r) sum += loads_.load(r);
    return std::max(max_load, (sum + rest_increase_[k]) / p_.ranks);
  }

  // Two empty ranks of equal capacity lead to mirror-image subtrees: only the first is tried.
  bool mirror_of_earlier_empty(int r) const {
    if (loads_.unit_count(r) > 0) return false;
    for (int q = 0; q < r; ++q) {
      if (loads_.unit_count(q) == 0 && p_.capacity_bytes[q] == p_.capacity_bytes[r]) return true;
    }
    return false;
  }

  void search(std::size_t k, double max_load) {
    if (++nodes_ > kMaxNodes) return;
    if (k == order_.size()) {
      best_makespan_ = max_load;
      for (std::size_t i = 0; i < order_.size(); ++i) best_owner_[order_[i]] = owner_[order_[i]];
      return;
    }
    const std::size_t u = order_[k];
    const Unit& unit = p_.units[u];
    // Interchangeable units take nondecreasing ranks: every other order is a relabelling.
    const int first = k > 0 && p_.units[order_[k - 1]].type == unit.type ? owner_[order_[k - 1]] : 0;
    for (int r = first; r < p_.ranks; ++r) {
      if (mirror_of_earlier_empty(r) || !loads_.fits(r, nullptr, &unit)) continue;
      loads_.add(r, unit);
      owner_[u] = r;
      const double new_max = std::max(max_load, loads_.load(r));
      if (lower_bound(k + 1, new_max) < best_makespan_ * (1 - kRelativeGain)) search(k + 1, new_max);
      loads_.remove(r, unit);
      owner_[u] = -1;
    }
  }

  const Problem& p_;
  std::vector<int>& best_owner_;
  RankLoads loads_;
  std::vector<std::size_t> order_;
  std::vector<double> rest_increase_;  // [k]: least total increase of units order_[k..]
  std::vector<int> owner_;
  double best_makespan_ = 0;
  long nodes_ = 0;
};

}  // namespace

bool solve_owners_exact(const Problem& problem, std::vector<int>& unit_owner) {
  // The bounds assume a load never drops when a unit is added; without that, keep the
  // local-search answer and claim nothing.
  if (!problem.monotone || problem.units.empty()) return false;
  return BranchAndBound(problem, unit_owner).run();
}

}  // namespace dmuon::owner_detail
