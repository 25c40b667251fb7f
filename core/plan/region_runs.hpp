// An op's regions as 2-D blocks: consecutive regions of one parameter, one count each, one
// stride apart. A sharded Newton-Schulz member of a strictly wide matrix holds a column block of
// a row-major matrix, one region per row (core/plan/ns_sharding.hpp); as a run it is one block of
// `lines` rows of `width` elements, `pitch` elements apart, which an executor moves with one
// pitched kernel or one 2-D copy instead of one launch per row.
#pragma once
#include <cstdint>
#include <vector>

#include "core/plan/plan.hpp"

namespace dmuon {

struct RegionRun {
  std::size_t param = 0;
  std::int64_t offset = 0;  // first element of the first line
  std::int64_t width = 0;   // elements per line
  std::int64_t lines = 1;
  std::int64_t pitch = 0;   // elements from one line's start to the next's; == width: contiguous
  std::int64_t elements() const { return width * lines; }
  // The elements from the first line's start to the last line's end (what the run spans).
  Region span() const { return {param, offset, (lines - 1) * pitch + width}; }
  bool strided() const { return lines > 1 && pitch > width; }
  bool operator==(const RegionRun&) const = default;
};

// The regions as maximal runs, in order; zero-count regions are skipped (they move nothing).
// A region joins the run before it when it has the run's parameter and width and starts one
// pitch after the run's last line, the pitch being set by the run's second line (at least the
// width: lines never overlap). Element i of a run is element (i / width) * pitch + i % width of
// its span, so the runs list the regions' elements in the regions' order.
std::vector<RegionRun> region_runs(const std::vector<Region>& regions);

// Whether some run of the regions is strided (lines > 1 with gaps between them).
bool has_strided_run(const std::vector<Region>& regions);

// Whether collective `op` is packed: a broadcast, reduce or all-reduce (the kinds that move their
// regions one NCCL call per region) with a strided run. The NCCL executor then packs its regions
// into one contiguous buffer around one NCCL call (kernels/exec/collectives.cpp); the cost model
// and the simulator price it so (core/cost/plan_cost.hpp). The one rule all three follow.
bool packs_regions(const Op& op);

}  // namespace dmuon
