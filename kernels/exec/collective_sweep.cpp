#include "kernels/exec/collective_sweep.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/error.hpp"
#include "core/median.hpp"
#include "kernels/comm/check.hpp"
#include "kernels/comm/watchdog.hpp"
#include "kernels/exec/nccl_wait.hpp"
#include "kernels/exec/split_comm.hpp"
#include "kernels/comm/world.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_events.hpp"
#include "kernels/cuda/owned_stream.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace dmuon::exec {
namespace {

using cuda::EventChain;
using cuda::OwnedStream;

constexpr std::size_t kElementBytes = 2;  // bf16, what the Plans' collectives move

struct Target {
  ncclComm_t comm = nullptr;
  int ranks = 1, me = 0;
  cudaStream_t stream = nullptr;
  char* a = nullptr;  // max_bytes: the in-place buffer, and an all-to-all's send buffer
  char* b = nullptr;  // max_bytes: an all-to-all's receive buffer
};

// Bytes of one point rounded down to whole bf16 parts of `ranks` members.
std::size_t part_bytes(OpKind kind, std::size_t bytes, int ranks) {
  const bool parted = kind == OpKind::all_gather || kind == OpKind::reduce_scatter || kind == OpKind::all_to_all;
  const std::size_t unit = kElementBytes * static_cast<std::size_t>(parted ? ranks : 1);
  return bytes / unit * unit;
}

// One call of `kind` moving `bytes` (nccl-tests size), in place as the executor runs it
// (kernels/exec/collectives.cpp); all-to-all as grouped send/recv between every pair, the
// rank's own part a device copy.
// Reductions average, as every Plan reduction does (core/plan/plan_builders.cpp): on one rank NCCL
// then runs a scaling kernel over the buffer where a sum runs nothing (the first H100 sweep
// used sum and read 0.5 us for a 622 MB reduce-scatter the executor spent 500 us on).
void launch(const Target& t, OpKind kind, std::size_t bytes) {
  const std::size_t count = bytes / kElementBytes;
  const std::size_t part = count / static_cast<std::size_t>(t.ranks);
  char* mine = t.a + static_cast<std::size_t>(t.me) * part * kElementBytes;
  switch (kind) {
    case OpKind::all_gather:
      DMUON_NCCL_CHECK(ncclAllGather(mine, t.a, part, ncclBfloat16, t.comm, t.stream));
      return;
    case OpKind::reduce_scatter:
      DMUON_NCCL_CHECK(ncclReduceScatter(t.a, mine, part, ncclBfloat16, ncclAvg, t.comm, t.stream));
      return;
    case OpKind::all_reduce:
      DMUON_NCCL_CHECK(ncclAllReduce(t.a, t.a, count, ncclBfloat16, ncclAvg, t.comm, t.stream));
      return;
    case OpKind::broadcast:
      DMUON_NCCL_CHECK(ncclBroadcast(t.a, t.a, count, ncclBfloat16, 0, t.comm, t.stream));
      return;
    case OpKind::reduce:
      DMUON_NCCL_CHECK(ncclReduce(t.a, t.a, count, ncclBfloat16, ncclAvg, 0, t.comm, t.stream));
      return;
    case OpKind::all_to_all: {
      const std::size_t part_bytes = part * kElementBytes;
      DMUON_NCCL_CHECK(ncclGroupStart());
      try {
        for (int p = 0; p < t.ranks; ++p) {
          char* send = t.a + static_cast<std::size_t>(p) * part_bytes;
          char* recv = t.b + static_cast<std::size_t>(p) * part_bytes;
          if (p == t.me) {
            DMUON_CUDA_CHECK(cudaMemcpyAsync(recv, send, part_bytes, cudaMemcpyDeviceToDevice, t.stream));
            continue;
          }
          DMUON_NCCL_CHECK(ncclSend(send, part, ncclBfloat16, p, t.comm, t.stream));
          DMUON_NCCL_CHECK(ncclRecv(recv, part, ncclBfloat16, p, t.comm, t.stream));
        }
      } catch (...) {
        (void)ncclGroupEnd();  // never leave the communicator inside a half-open group
        throw;
      }
      DMUON_NCCL_CHECK(ncclGroupEnd());
      return;
    }
    default: throw Error("collective sweep: " + std::string(to_string(kind)) + " is not a collective");
  }
}

int iterations_at(std::size_t bytes, const CommSweepOptions& o) {
  constexpr std::size_t kFullUpTo = std::size_t{64} << 20;
  if (bytes <= kFullUpTo) return o.iterations;
  const double scaled = o.iterations * static_cast<double>(kFullUpTo) / static_cast<double>(bytes);
  return std::min(o.iterations, std::max(5, static_cast<int>(scaled)));
}

// This rank's seconds per call of `iterations` calls issued back to back (nccl-tests' "time":
// the whole loop over the iteration count). Back to back, not one call between two events: the
// executor issues a Plan's collectives in a stream as fast as the host enqueues them, so a small
// call costs what the host needs to enqueue it (a one-rank in-place call queues no GPU work at
// all, yet the 1 x H100 executor spent ~7 us per call on them), and only a loop sees that.
double time_point(const Target& t, OpKind kind, std::size_t bytes, RankHandle& h, const CommSweepOptions& o,
                  const EventChain& events) {
  const std::string where = "rank " + std::to_string(h.rank()) + ": " + std::string(to_string(kind)) + " of " +
                            std::to_string(bytes) + " bytes on " + std::to_string(t.ranks) + " ranks";
  const int iterations = iterations_at(bytes, o);
  const int warmup = bytes > (std::size_t{64} << 20) ? std::min(o.warmup, 2) : o.warmup;
  return loop_seconds_per_call([&] { launch(t, kind, bytes); }, warmup, iterations, t.stream, events[0], events[1], h,
                               t.comm, o.timeout_seconds, where);
}

std::vector<std::size_t> sizes_of(const CommSweepOptions& o) {
  std::vector<std::size_t> out;
  for (std::size_t b = o.min_bytes; b <= o.max_bytes; b *= 2) out.push_back(b);
  return out;
}

void validate(const CommSweepOptions& o) {
  if (o.min_bytes < 64 || o.max_bytes < o.min_bytes) {
    throw Error("collective sweep: sizes must satisfy 64 <= min_bytes <= max_bytes");
  }
  if (o.warmup < 0 || o.iterations < 1 || o.passes < 1 || !(o.timeout_seconds > 0)) {
    throw Error("collective sweep: warmup >= 0, iterations >= 1, passes >= 1 and a positive timeout are required");
  }
}

}  // namespace

std::vector<OpKind> sweep_kinds() {
  return {OpKind::all_gather, OpKind::reduce_scatter, OpKind::all_reduce,
          OpKind::broadcast,  OpKind::reduce,         OpKind::all_to_all};
}

std::vector<int> communicator_sizes(int world) {
  std::vector<int> out;
  for (int s = world; s >= 1; --s) {
    if (world % s == 0) out.push_back(s);
  }
  return out;
}

double bus_bandwidth_factor(OpKind kind, int ranks) {
  const double n = ranks;
  switch (kind) {
    case OpKind::all_reduce: return 2 * (n - 1) / n;
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_to_all: return (n - 1) / n;
    default: return 1;
  }
}

std::string nccl_version() {
  int v = 0;
  DMUON_NCCL_CHECK(ncclGetVersion(&v));
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::vector<CommSweepCurve> sweep_collectives(RankHandle& h, const CommSweepOptions& options,
                                              const std::function<void(const CommSweepCurve&)>& on_curve) {
  validate(options);
  const std::vector<OpKind> kinds = options.kinds.empty() ? sweep_kinds() : options.kinds;
  const std::vector<std::size_t> sizes = sizes_of(options);
  DMUON_CUDA_CHECK(cudaSetDevice(h.comms().device()));
  cuda::DeviceBuffer a(options.max_bytes, "collective sweep buffer"), b(options.max_bytes, "all-to-all receive buffer");
  OwnedStream stream;
  a.zero(stream.get());  // zeros: sums stay finite whatever the repetitions
  b.zero(stream.get());
  const EventChain events(2);  // before the timed loop and after its last call
  std::vector<CommSweepCurve> curves;
  try {
    for (int size : communicator_sizes(h.world())) {
      const SplitComm comm(h.comms(), size, options.timeout_seconds, "the collective sweep");
      const Target t{comm.get(), size, h.rank() % size, stream.get(), a.as<char>(), b.as<char>()};
      // The points of every kind (what each call moves), then `passes` sweeps over all of them:
      // a pass takes seconds, so a host or NVLink hiccup of a few hundred milliseconds spoils
      // neighbouring points of one pass only, and the median over passes drops it (a one-pass
      // 1 x H100 sweep read 36-47 us for 1-16 MiB one-rank reduce-scatters that took 6 us on
      // other leases and in the same lease's steps, reports/sim-validation.md).
      std::vector<CommSweepCurve> group(kinds.size());
      for (std::size_t k = 0; k < kinds.size(); ++k) {
        CommSweepCurve& c = group[k];
        c.kind = kinds[k];
        c.ranks = size;
        c.communicators = h.world() / size;
        for (std::size_t bytes : sizes) {
          const std::size_t moved = part_bytes(c.kind, bytes, size);
          if (moved == 0 || (!c.points.empty() && moved <= c.points.back().bytes)) continue;
          c.points.push_back({static_cast<double>(moved), static_cast<std::int64_t>(moved / kElementBytes), 0, false});
        }
      }
      // samples[k][i]: this rank's seconds per call of kind k's point i, one per pass.
      std::vector<std::vector<std::vector<double>>> samples(kinds.size());
      for (std::size_t k = 0; k < kinds.size(); ++k) samples[k].resize(group[k].points.size());
      for (int pass = 0; pass < options.passes; ++pass) {
        for (std::size_t k = 0; k < kinds.size(); ++k) {
          for (std::size_t i = 0; i < group[k].points.size(); ++i) {
            const auto moved = static_cast<std::size_t>(group[k].points[i].bytes);
            samples[k][i].push_back(time_point(t, kinds[k], moved, h, options, events));
          }
        }
      }
      for (std::size_t k = 0; k < kinds.size(); ++k) {
        CommSweepCurve& c = group[k];
        std::vector<double> mine;
        for (const std::vector<double>& s : samples[k]) mine.push_back(median(s));
        // nccl-tests' time is the slowest rank's: every group's every member, since they ran at once.
        const std::vector<double> all = h.all_gather(mine);
        for (std::size_t i = 0; i < c.points.size(); ++i) {
          CommSweepPoint& p = c.points[i];
          for (int r = 0; r < h.world(); ++r) p.seconds = std::max(p.seconds, all[static_cast<std::size_t>(r) * mine.size() + i]);
          p.below_resolution = p.seconds < kEventResolutionSeconds;
          if (p.below_resolution) p.seconds = kEventResolutionSeconds;
        }
        if (on_curve) on_curve(c);
        curves.push_back(std::move(c));
      }
      DMUON_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    }
  } catch (...) {
    // Before the buffers are freed: a free waits for the device, which a collective stuck on a
    // dead peer would never let finish.
    h.comms().abort_all();
    throw;
  }
  return curves;
}

}  // namespace dmuon::exec
