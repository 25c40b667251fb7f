// sim/launch_order's real_dependency: a dependency between two collectives is real only where
// they touch a common element (whatever the order their regions are listed in); a compute op's
// dependency always is.
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
  // Empty parts never overlap (a rank with no rows).
  CHECK_FALSE(sim::real_dependency(gather({{3, 0, 0}, {3, 0, 0}}), broadcast({{3, 0, 10}})));
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
