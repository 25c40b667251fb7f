// NCCL collectives timed against size on every communicator shape of this machine, for
// `dmuon-bench calibrate`: the world communicator and ncclCommSplit groups of every size that
// divides it, bf16, sizes in nccl-tests' "size" convention (core/cost/plan_cost.hpp payload_bytes).
// No CUDA or NCCL header: harness/ calls it from a launch_ranks body.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/plan/plan.hpp"
#include "kernels/exec/launch.hpp"

namespace dmuon::exec {

struct CommSweepOptions {
  // all_gather, reduce_scatter, all_reduce, broadcast, reduce, all_to_all when empty.
  std::vector<OpKind> kinds;
  std::size_t min_bytes = std::size_t{4} << 10;  // powers of two from here ...
  std::size_t max_bytes = std::size_t{1} << 30;  // ... up to here (both included)
  int warmup = 5;
  // Timed calls per point up to 64 MiB; above, fewer in proportion to the size (at least 5),
  // so the 1 GiB points do not dominate the sweep.
  int iterations = 20;
  // Sweeps over every kind and size; each point is the median of its passes (one pass is one
  // timed loop of `iterations` calls per point).
  int passes = 3;
  double timeout_seconds = 300;  // one point may take this long before the job aborts
};

struct CommSweepPoint {
  double bytes = 0;          // nccl-tests "size" actually moved (a multiple of the part count)
  std::int64_t count = 0;    // bf16 elements in `bytes`
  double seconds = 0;        // one call: the max over ranks of each rank's median over passes
  // Below what CUDA events resolve (about 0.5 us): a call that enqueues no GPU work at all
  // (NCCL on a one-rank communicator, in place). Recorded as kEventResolutionSeconds (calibration
  // times must be > 0) and marked in the table.
  bool below_resolution = false;
};
inline constexpr double kEventResolutionSeconds = 0.5e-6;

struct CommSweepCurve {
  OpKind kind = OpKind::all_reduce;
  int ranks = 1;          // communicator size
  int communicators = 1;  // how many such communicators ran at once (world / ranks)
  std::vector<CommSweepPoint> points;
};

// The default kinds, in the order the sweep runs them.
std::vector<OpKind> sweep_kinds();
// Sizes that divide `world`, largest first (8 -> 8, 4, 2, 1).
std::vector<int> communicator_sizes(int world);
// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): all_reduce 2(n-1)/n; all_gather,
// reduce_scatter, all_to_all (n-1)/n; broadcast, reduce 1.
double bus_bandwidth_factor(OpKind kind, int ranks);
// "2.27.3" from ncclGetVersion.
std::string nccl_version();

// Collective over the world: every rank calls it with the same options. For each communicator
// size (communicator_sizes) every rank joins its group (ranks r / size), all groups time each
// kind and size at once (as a Plan's groups run), and every rank gets the curves. `on_curve`
// runs on every rank after each curve (print from rank 0 only). Throws dmuon::Error naming the
// rank, kind and size on an NCCL/CUDA failure or a timeout, after aborting the communicators.
std::vector<CommSweepCurve> sweep_collectives(RankHandle& rank, const CommSweepOptions& options,
                                              const std::function<void(const CommSweepCurve&)>& on_curve);

}  // namespace dmuon::exec
