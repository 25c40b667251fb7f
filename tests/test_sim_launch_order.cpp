// sim/launch_order's real_dependency and RealDeps (its answers for one rank's list): a
// dependency between two collectives is real only where they touch a common element (whatever
// the order their regions are listed in); a compute op's dependency always is.
#include <algorithm>
#include <set>
#include <tuple>

#include "catch_compat.hpp"
#include "sim/launch_order.hpp"

using namespace dmuon;

namespace {

Op gather(std::vector<Region> parts) {
  Op op;
  op.kind = OpKind::all_gather;
  op.parts = std::move(parts);
  return op;
}

Op broadcast(std::vector<Region> regions) {
  Op op;
  op.kind = OpKind::broadcast;
  op.regions = std::move(regions);
  return op;
}

}  // namespace

TEST_CASE("real_dependency: collectives depend only where their elements overlap", "[sim][launch_order]") {
  // In order, overlapping in the middle: shard 1 of 4 against its owner's region.
  const Op shards = gather({{3, 0, 100}, {3, 100, 100}, {3, 200, 100}, {3, 300, 100}});
  CHECK(sim::real_dependency(shards, broadcast({{3, 150, 10}})));
  CHECK(sim::real_dependency(broadcast({{3, 150, 10}}), shards));
  // Two experts of one stack: adjacent, disjoint (end is exclusive).
  CHECK_FALSE(sim::real_dependency(broadcast({{5, 0, 100}}), broadcast({{5, 100, 100}})));
  // Same offsets, other parameters.
  CHECK_FALSE(sim::real_dependency(broadcast({{1, 0, 100}, {2, 0, 100}}), broadcast({{0, 0, 100}, {4, 0, 100}})));
  // Empty parts never overlap (a rank with no rows), not even strictly inside another region.
  CHECK_FALSE(sim::real_dependency(gather({{3, 0, 0}, {3, 0, 0}}), broadcast({{3, 0, 10}})));
  CHECK_FALSE(sim::real_dependency(gather({{3, 7, 0}, {3, 9, 7}}), broadcast({{3, 5, 3}})));
}

TEST_CASE("real_dependency: regions listed out of order are still compared in full", "[sim][launch_order]") {
  // A single pass over these lists as given would stop at [100, 150) against [10, 15) and
  // miss [0, 50): the overlap is only found in order.
  const Op unsorted = gather({{7, 100, 50}, {7, 0, 50}});
  CHECK(sim::real_dependency(unsorted, broadcast({{7, 10, 5}})));
  CHECK(sim::real_dependency(broadcast({{7, 10, 5}}), unsorted));
  CHECK_FALSE(sim::real_dependency(unsorted, broadcast({{7, 60, 20}})));
  // Regions and parts on one op, and an all-to-all's transfers: every element counts.
  Op both = broadcast({{2, 0, 10}});
  both.parts = {{2, 500, 10}};
  CHECK(sim::real_dependency(both, broadcast({{2, 505, 1}})));
  Op a2a;
  a2a.kind = OpKind::all_to_all;
  a2a.transfers = {{0, 1, {9, 40, 8}, {9, 40, 8}}};
  CHECK(sim::real_dependency(a2a, broadcast({{9, 47, 1}})));
  CHECK_FALSE(sim::real_dependency(a2a, broadcast({{9, 48, 1}})));
}

TEST_CASE("real_dependency: a compute op's dependency is always real", "[sim][launch_order]") {
  Op update;
  update.kind = OpKind::muon_update;
  update.regions = {{1, 0, 10}};
  CHECK(sim::real_dependency(update, broadcast({{2, 0, 10}})));
  CHECK(sim::real_dependency(broadcast({{2, 0, 10}}), update));
}

TEST_CASE("real_dependency and RealDeps answer every dependency as a brute-force element check does", "[sim][launch_order]") {
  // Random lists over 3 parameters x 64 elements: in order or shuffled, disjoint or
  // overlapping within themselves, empty regions, regions and parts on one op, transfers (both
  // paths: the lists read in place, sorted copies). Each answer must be the element-by-element
  // one, and RealDeps must hand back each op's answers at its dependencies' positions.
  std::uint64_t seed = 12345;
  auto next = [&](int n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((seed >> 33) % static_cast<std::uint64_t>(n));
  };
  auto random_regions = [&](bool in_order, bool disjoint) {
    std::vector<Region> out;
    const int count = next(6);
    std::int64_t at = 0;
    std::size_t param = static_cast<std::size_t>(next(3));
    for (int i = 0; i < count; ++i) {
      if (disjoint) {
        if (next(3) == 0 && param < 2) ++param, at = 0;
        const std::int64_t begin = at + next(8), length = next(10);
        out.push_back({param, begin, length});
        at = begin + length;
      } else {
        out.push_back({static_cast<std::size_t>(next(3)), next(60), next(12)});
      }
    }
    if (in_order) {
      std::sort(out.begin(), out.end(), [](const Region& x, const Region& y) {
        return std::tuple{x.param, x.offset, x.offset + x.count} < std::tuple{y.param, y.offset, y.offset + y.count};
      });
    } else {
      for (std::size_t i = out.size(); i > 1; --i) std::swap(out[i - 1], out[static_cast<std::size_t>(next(static_cast<int>(i)))]);
    }
    return out;
  };
  auto random_op = [&] {
    Op op;
    op.kind = next(8) == 0 ? OpKind::momentum : OpKind::broadcast;
    const bool in_order = next(2) == 0, disjoint = next(2) == 0;
    (next(2) == 0 ? op.regions : op.parts) = random_regions(in_order, disjoint);
    if (next(6) == 0) op.parts = random_regions(true, true);
    if (next(8) == 0) op.transfers = {{0, 1, {1, next(60), next(5)}, {2, next(60), next(5)}}};
    return op;
  };
  auto elements = [](const Op& op) {
    std::set<std::pair<std::size_t, std::int64_t>> out;
    auto add = [&](const Region& r) {
      for (std::int64_t e = r.offset; e < r.offset + r.count; ++e) out.insert({r.param, e});
    };
    for (const Region& r : op.regions) add(r);
    for (const Region& r : op.parts) add(r);
    for (const Transfer& t : op.transfers) add(t.from), add(t.to);
    return out;
  };
  int overlapping = 0, apart = 0;
  for (int trial = 0; trial < 400; ++trial) {
    // ops 0..9 are the b's; op 10 is a, depending on each of them, op 11 on op 10 alone.
    std::vector<Op> ops;
    for (int k = 0; k < 10; ++k) ops.push_back(random_op());
    ops.push_back(random_op());
    for (int k = 9; k >= 0; --k) ops[10].deps.push_back(k);
    ops.push_back(random_op());
    ops[11].deps = {10};
    const sim::RealDeps real(ops);
    const Op& a = ops[10];
    const auto ea = elements(a);
    for (std::size_t k = 0; k < a.deps.size(); ++k) {
      const Op& b = ops[static_cast<std::size_t>(a.deps[k])];
      bool expected = !is_collective(a.kind) || !is_collective(b.kind);
      if (!expected) {
        for (const auto& e : elements(b)) expected = expected || ea.count(e) > 0;
      }
      (expected ? overlapping : apart) += 1;
      REQUIRE(sim::real_dependency(a, b) == expected);
      REQUIRE(real.real(10, k) == expected);
    }
    REQUIRE(real.real(11, 0) == sim::real_dependency(ops[11], a));
  }
  CHECK(overlapping > 500);
  CHECK(apart > 500);
}
