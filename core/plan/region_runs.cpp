#include "core/plan/region_runs.hpp"

namespace dmuon {

std::vector<RegionRun> region_runs(const std::vector<Region>& regions) {
  std::vector<RegionRun> runs;
  for (const Region& r : regions) {
    if (r.count == 0) continue;
    if (!runs.empty()) {
      RegionRun& run = runs.back();
      const bool same_shape = r.param == run.param && r.count == run.width;
      if (same_shape && run.lines == 1 && r.offset >= run.offset + run.width) {
        run.pitch = r.offset - run.offset;
        run.lines = 2;
        continue;
      }
      if (same_shape && run.lines > 1 && r.offset == run.offset + run.lines * run.pitch) {
        ++run.lines;
        continue;
      }
    }
    runs.push_back({r.param, r.offset, r.count, 1, r.count});
  }
  return runs;
}

bool has_strided_run(const std::vector<Region>& regions) {
  for (const RegionRun& run : region_runs(regions)) {
    if (run.strided()) return true;
  }
  return false;
}

bool packs_regions(const Op& op) {
  const bool per_region = op.kind == OpKind::broadcast || op.kind == OpKind::reduce || op.kind == OpKind::all_reduce;
  return per_region && has_strided_run(op.regions);
}

}  // namespace dmuon
