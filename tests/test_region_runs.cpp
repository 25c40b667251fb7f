// An op's regions as 2-D runs (core/plan/region_runs.hpp): a sharded member's column block of a
// row-major matrix is one strided run, contiguous pieces merge, anything else starts a new run;
// and the cost model counts a packed collective as one NCCL call with its copies
// (core/cost/plan_cost.hpp), which the verify case's wide member really produces.
#include <vector>

#include "catch_compat.hpp"
#include "core/cost/plan_cost.hpp"
#include "core/model/routing.hpp"
#include "core/plan/ns_sharding.hpp"
#include "core/plan/region_runs.hpp"
#include "core/plan/step_planner.hpp"
#include "harness/verify/sharded_ns_case.hpp"

using namespace dmuon;

TEST_CASE("a column block of a row-major matrix is one strided run", "[region-runs]") {
  std::vector<Region> rows;
  for (int i = 0; i < 5; ++i) rows.push_back({3, 100 + i * 40, 7});  // 7 columns of a 5 x 40 block at 100
  const std::vector<RegionRun> runs = region_runs(rows);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0] == RegionRun{3, 100, 7, 5, 40});
  CHECK(runs[0].strided());
  CHECK(runs[0].elements() == 35);
  CHECK(runs[0].span() == Region{3, 100, 4 * 40 + 7});
  CHECK(has_strided_run(rows));
}

TEST_CASE("runs split where the parameter, width or pitch changes and skip empty regions", "[region-runs]") {
  const std::vector<Region> regions{
      {1, 0, 4},  {1, 10, 4}, {1, 20, 4},  // one run, pitch 10
      {1, 31, 4},                          // pitch 11: a new run
      {1, 35, 0},                          // empty: skipped
      {2, 35, 4},                          // another parameter
      {2, 39, 4}, {2, 43, 4},              // contiguous with it: one run, pitch == width
      {2, 47, 5},                          // wider: a new run
      {2, 40, 5},                          // before the last one: a new run, never a negative pitch
  };
  const std::vector<RegionRun> runs = region_runs(regions);
  REQUIRE(runs.size() == 5);
  CHECK(runs[0] == RegionRun{1, 0, 4, 3, 10});
  CHECK(runs[1] == RegionRun{1, 31, 4, 1, 4});
  CHECK(runs[2] == RegionRun{2, 35, 4, 3, 4});
  CHECK_FALSE(runs[2].strided());  // contiguous: nothing to pack
  CHECK(runs[3] == RegionRun{2, 47, 5, 1, 5});
  CHECK(runs[4] == RegionRun{2, 40, 5, 1, 5});
  std::int64_t elements = 0;
  for (const RegionRun& r : runs) elements += r.elements();
  CHECK(elements == region_elements(regions));  // every element once
  CHECK_FALSE(has_strided_run({{1, 0, 4}, {1, 4, 4}, {2, 0, 9}}));
  CHECK(region_runs({}).empty());
}

TEST_CASE("a packed collective is one NCCL call with a pack and an unpack", "[region-runs][cost]") {
  Op op;
  op.kind = OpKind::reduce;
  op.root = 1;
  for (int i = 0; i < 8; ++i) op.regions.push_back({0, i * 100, 30});
  for (OpKind kind : {OpKind::reduce, OpKind::broadcast, OpKind::all_reduce}) {
    op.kind = kind;
    CHECK(nccl_calls(op) == 1);
    CHECK(packed_copy_elements(op) == 2 * 240);  // senders pack, then receivers unpack
  }
  Op contiguous = op;
  contiguous.regions = {{0, 0, 30}, {1, 0, 30}, {2, 0, 30}};
  CHECK(nccl_calls(contiguous) == 3);  // one call per region, as before
  CHECK(packed_copy_elements(contiguous) == 0);
  Op gather = op;
  gather.kind = OpKind::all_gather;  // parts, not regions: never packed
  CHECK(packed_copy_elements(gather) == 0);
  CHECK_FALSE(packs_regions(gather));
  CHECK_FALSE(packs_regions(contiguous));
  CHECK(packs_regions(op));
  Op momentum = op;
  momentum.kind = OpKind::momentum;  // compute: pitched launches, nothing to pack
  CHECK_FALSE(packs_regions(momentum));
}

TEST_CASE("the verify case's wide member moves its column block in packed collectives", "[region-runs][sharded-ns]") {
  const ModelSpec model = verify::sharded_ns_test_model("wide");
  const Routing routing = route_parameters(model, {});
  const StepPlan step = plan_step(model, routing, optimizer_preset("torch"), Strategy::owner_striped, make_mesh(1, 2, "mesh"),
                                  verify::flops_only_cost(), verify::free_link_plan_options());
  REQUIRE(sharded_ns_calls(step.plan) == 1);
  int packed = 0, strided_compute = 0;
  for (const auto& ops : step.plan.ranks) {
    for (const Op& op : ops) {
      if (!has_strided_run(op.regions)) continue;
      if (is_collective(op.kind)) {
        ++packed;
        CHECK(nccl_calls(op) == 1);
      } else {
        ++strided_compute;
      }
    }
  }
  CHECK(packed >= 2);           // at least the gradient's reduce and the update's broadcast
  CHECK(strided_compute >= 2);  // the members' momentum and update
}
