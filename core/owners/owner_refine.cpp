// Local search on owners: from the most loaded rank, move one unit away or swap it for a unit
// of another rank, taking the best move (or, when no move helps, the best swap) while it
// lowers (makespan, compute makespan, sum of squared compute loads). The two makespans differ
// only where a rank's base load holds sharded calls' collectives (Problem::base_collective_seconds):
// when such a call sets the makespan, no move can lower it, and the search goes on from the rank
// that computes the most, so the other ranks still balance the work the simulator counts.
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
  double makespan, compute_makespan, sum_squares;
  bool better_than(const Score& o) const {
    if (makespan < o.makespan * (1 - kRelativeGain)) return true;
    if (makespan > o.makespan) return false;
    if (compute_makespan < o.compute_makespan * (1 - kRelativeGain)) return true;
    if (compute_makespan > o.compute_makespan) return false;
    return sum_squares < o.sum_squares * (1 - kRelativeGain);
  }
};

// The three largest of one per-rank figure (load or compute), enough to know its maximum
// without any two given ranks.
class TopLoads {
 public:
  template <class Figure>
  TopLoads(int ranks, Figure figure) {
    for (int r = 0; r < ranks; ++r) {
      const double v = figure(r);
      for (int k = 0; k < 3; ++k) {
        if (rank[k] < 0 || v > value_[k]) {
          for (int j = 2; j > k; --j) rank[j] = rank[j - 1], value_[j] = value_[j - 1];
          rank[k] = r, value_[k] = v;
          break;
        }
      }
    }
  }
  double max_without(int a, int b) const {
    for (int k = 0; k < 3; ++k) {
      if (rank[k] >= 0 && rank[k] != a && rank[k] != b) return value_[k];
    }
    return 0;
  }
  double max() const { return value_[0]; }
  std::array<int, 3> rank{-1, -1, -1};

 private:
  std::array<double, 3> value_{0, 0, 0};
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
      const TopLoads wall(p_.ranks, [&](int r) { return loads_.load(r); });
      const TopLoads compute(p_.ranks, [&](int r) { return loads_.compute(r); });
      base_ = {wall.max(), compute.max(), sum_squares()};
      Change best{-1, -1, -1, base_};
      // The rank that finishes last, then (when nothing it holds can go) the one that computes
      // the most. Units of one type are interchangeable, so trying one of each type tries them
      // all. Moves first: they are cheap to scan; swaps (types^2 per rank pair) only when no
      // move helps.
      const std::array<int, 2> sources{wall.rank[0], compute.rank[0]};
      int a = -1;
      for (int i = 0; i < (sources[1] == sources[0] ? 1 : 2) && a < 0; ++i) {
        for (bool swaps : {false, true}) {
          for (int t = 0; t < p_.types; ++t) {
            if (on_rank_[sources[i]][t] > 0) try_from(sources[i], t, swaps, wall, compute, best);
          }
          if (best.to_rank >= 0) break;
        }
        if (best.to_rank >= 0) a = sources[i];
      }
      if (a < 0) return;
      apply(a, best);
    }
  }

 private:
  double sum_squares() const {
    double squares = 0;
    for (int r = 0; r < p_.ranks; ++r) squares += loads_.compute(r) * loads_.compute(r);
    return squares;
  }

  void consider(int a, int b, const Unit* out, const Unit* in, int t, int back, const TopLoads& wall,
                const TopLoads& compute, Change& best) {
    if (!loads_.fits(b, in, out)) return;
    if (in && !loads_.fits(a, out, in)) return;
    const double la = loads_.load_with(a, out, in), lb = loads_.load_with(b, in, out);
    const double ca = la - p_.base_collective_seconds[a], cb = lb - p_.base_collective_seconds[b];
    const double old_a = loads_.compute(a), old_b = loads_.compute(b);
    const double squares = base_.sum_squares - old_a * old_a - old_b * old_b + ca * ca + cb * cb;
    const Score s{std::max({la, lb, wall.max_without(a, b)}), std::max({ca, cb, compute.max_without(a, b)}), squares};
    if (s.better_than(best.score)) best = {t, b, back, s};
  }

  void try_from(int a, int t, bool swaps, const TopLoads& wall, const TopLoads& compute, Change& best) {
    const Unit* out = &p_.units[representative_[t]];
    for (int b = 0; b < p_.ranks; ++b) {
      if (b == a) continue;
      if (!swaps) {
        consider(a, b, out, nullptr, t, -1, wall, compute, best);
        continue;
      }
      for (int v = 0; v < p_.types; ++v) {
        if (v != t && on_rank_[b][v] > 0) consider(a, b, out, &p_.units[representative_[v]], t, v, wall, compute, best);
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
  Score base_{0, 0, 0};  // the current assignment's
};

}  // namespace

void refine_owners(const Problem& problem, std::vector<int>& unit_owner) {
  if (problem.ranks < 2 || problem.units.empty()) return;
  Search(problem, unit_owner).run();
}

}  // namespace dmuon::owner_detail
