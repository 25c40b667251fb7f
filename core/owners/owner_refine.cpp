// Local search on owners: from the most loaded rank, move one unit away or swap it for a unit
// of another rank, taking the best move (or, when no move helps, the best swap) while it
// lowers (makespan, sum of squared loads).
#include <algorithm>
#include <array>

#include "core/owners/owner_problem.hpp"

namespace dmuon::owner_detail {
namespace {

// Relative slack for "strictly lower": a change must gain more than rounding noise, so the
// search cannot cycle between assignments that differ only in the last bits.
constexpr double kRelativeGain = 1e-12;
// Every accepted change lowers the objective, so the search ends; this only bounds its time.
constexpr int kMaxChanges = 1'000'000;

struct Score {
  double makespan, sum_squares;
  bool better_than(const Score& o) const {
    if (makespan < o.makespan * (1 - kRelativeGain)) return true;
    return makespan <= o.makespan && sum_squares < o.sum_squares * (1 - kRelativeGain);
  }
};

// The three largest loads, enough to know the makespan without any two given ranks.
struct TopLoads {
  std::array<int, 3> rank{-1, -1, -1};
  TopLoads(const RankLoads& loads, int ranks) {
    for (int r = 0; r < ranks; ++r) {
      for (int k = 0; k < 3; ++k) {
        if (rank[k] < 0 || loads.load(r) > loads.load(rank[k])) {
          for (int j = 2; j > k; --j) rank[j] = rank[j - 1];
          rank[k] = r;
          break;
        }
      }
    }
  }
  double max_without(const RankLoads& loads, int a, int b) const {
    for (int r : rank) {
      if (r >= 0 && r != a && r != b) return loads.load(r);
    }
    return 0;
  }
};

struct Change {
  int from_type = -1, to_rank = -1, back_type = -1;  // back_type < 0: a move, else a swap
  Score score;
};

class Search {
 public:
  Search(const Problem& p, std::vector<int>& owner) : p_(p), owner_(owner), loads_(p), on_rank_(p.ranks) {
    representative_.assign(p.types, -1);
    for (auto& counts : on_rank_) counts.assign(p.types, 0);
    for (std::size_t u = 0; u < p.units.size(); ++u) {
      loads_.add(owner[u], p.units[u]);
      ++on_rank_[owner[u]][p.units[u].type];
      if (representative_[p.units[u].type] < 0) representative_[p.units[u].type] = int(u);
    }
  }

  void run() {
    for (int changes = 0; changes < kMaxChanges; ++changes) {
      const TopLoads top(loads_, p_.ranks);
      const int a = top.rank[0];
      Change best{-1, -1, -1, current_score(a)};
      base_squares_ = best.score.sum_squares;
      // Units of one type are interchangeable, so trying one of each type tries them all.
      // Moves first: they are cheap to scan; swaps (types^2 per rank pair) only when no move helps.
      for (bool swaps : {false, true}) {
        for (int t = 0; t < p_.types; ++t) {
          if (on_rank_[a][t] > 0) try_from(a, t, swaps, top, best);
        }
        if (best.to_rank >= 0) break;
      }
      if (best.to_rank < 0) return;
      apply(a, best);
    }
  }

 private:
  Score current_score(int a) const {
    double squares = 0;
    for (int r = 0; r < p_.ranks; ++r) squares += loads_.load(r) * loads_.load(r);
    return {loads_.load(a), squares};
  }

  void consider(int a, int b, const Unit* out, const Unit* in, int t, int back, const TopLoads& top, Change& best) {
    if (!loads_.fits(b, in, out)) return;
    if (in && !loads_.fits(a, out, in)) return;
    const double la = loads_.load_with(a, out, in), lb = loads_.load_with(b, in, out);
    const double old_a = loads_.load(a), old_b = loads_.load(b);
    const double squares = base_squares_ - old_a * old_a - old_b * old_b + la * la + lb * lb;
    const Score s{std::max({la, lb, top.max_without(loads_, a, b)}), squares};
    if (s.better_than(best.score)) best = {t, b, back, s};
  }

  void try_from(int a, int t, bool swaps, const TopLoads& top, Change& best) {
    const Unit* out = &p_.units[representative_[t]];
    for (int b = 0; b < p_.ranks; ++b) {
      if (b == a) continue;
      if (!swaps) {
        consider(a, b, out, nullptr, t, -1, top, best);
        continue;
      }
      for (int v = 0; v < p_.types; ++v) {
        if (v != t && on_rank_[b][v] > 0) consider(a, b, out, &p_.units[representative_[v]], t, v, top, best);
      }
    }
  }

  int unit_of_type_on(int type, int rank) const {
    for (std::size_t u = 0; u < p_.units.size(); ++u) {
      if (p_.units[u].type == type && owner_[u] == rank) return int(u);
    }
    return -1;
  }

  void relocate(int u, int to) {
    loads_.remove(owner_[u], p_.units[u]);
    --on_rank_[owner_[u]][p_.units[u].type];
    owner_[u] = to;
    loads_.add(to, p_.units[u]);
    ++on_rank_[to][p_.units[u].type];
  }

  void apply(int a, const Change& c) {
    const int u = unit_of_type_on(c.from_type, a);
    const int v = c.back_type >= 0 ? unit_of_type_on(c.back_type, c.to_rank) : -1;
    relocate(u, c.to_rank);
    if (v >= 0) relocate(v, a);
  }

  const Problem& p_;
  std::vector<int>& owner_;
  RankLoads loads_;
  std::vector<std::vector<int>> on_rank_;  // [rank][type] -> units
  std::vector<int> representative_;        // a unit of each type
  double base_squares_ = 0;
};

}  // namespace

void refine_owners(const Problem& problem, std::vector<int>& unit_owner) {
  if (problem.ranks < 2 || problem.units.empty()) return;
  Search(problem, unit_owner).run();
}

}  // namespace dmuon::owner_detail
