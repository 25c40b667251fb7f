#include "kernels/exec/grouped_call_probe.hpp"

#include <algorithm>
#include <string>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/error.hpp"
#include "core/median.hpp"
#include "kernels/comm/check.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_events.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/owned_stream.hpp"
#include "kernels/exec/nccl_wait.hpp"
#include "kernels/exec/split_comm.hpp"

namespace dmuon::exec {
namespace {

constexpr std::size_t kElementBytes = 2;    // bf16, what the Plans' collectives move
constexpr std::size_t kPartElements = 128;  // each call's part: whole 256-byte units

// One group of `calls` in-place calls of `kind`, consecutive equal parts of `base`. Reductions
// average as every Plan reduction does (on one rank NCCL then runs a scaling kernel a call);
// broadcast roots at the only rank.
void launch_group(OpKind kind, char* base, std::size_t part_count, int calls, ncclComm_t comm, cudaStream_t stream) {
  DMUON_NCCL_CHECK(ncclGroupStart());
  try {
    for (int i = 0; i < calls; ++i) {
      char* p = base + static_cast<std::size_t>(i) * part_count * kElementBytes;
      switch (kind) {
        case OpKind::all_reduce:
          DMUON_NCCL_CHECK(ncclAllReduce(p, p, part_count, ncclBfloat16, ncclAvg, comm, stream));
          break;
        case OpKind::reduce:
          DMUON_NCCL_CHECK(ncclReduce(p, p, part_count, ncclBfloat16, ncclAvg, 0, comm, stream));
          break;
        case OpKind::broadcast:
          DMUON_NCCL_CHECK(ncclBroadcast(p, p, part_count, ncclBfloat16, 0, comm, stream));
          break;
        default: throw Error("grouped call probe: " + std::string(to_string(kind)) + " is not issued as a group of calls");
      }
    }
  } catch (...) {
    (void)ncclGroupEnd();  // never leave the communicator inside a half-open group
    throw;
  }
  DMUON_NCCL_CHECK(ncclGroupEnd());
}

void validate(const GroupedCallOptions& o) {
  if (o.kinds.empty() || o.group_bytes.empty() || o.calls.size() < 2) {
    throw Error("grouped call probe: needs a kind, a group size and at least two call counts");
  }
  if (!std::is_sorted(o.group_bytes.begin(), o.group_bytes.end()) ||
      std::adjacent_find(o.group_bytes.begin(), o.group_bytes.end()) != o.group_bytes.end()) {
    throw Error("grouped call probe: group sizes must be strictly increasing");
  }
  const int most = *std::max_element(o.calls.begin(), o.calls.end());
  if (*std::min_element(o.calls.begin(), o.calls.end()) < 1) throw Error("grouped call probe: call counts must be >= 1");
  if (o.group_bytes.front() < static_cast<std::size_t>(most) * kPartElements * kElementBytes) {
    throw Error("grouped call probe: the smallest group (" + std::to_string(o.group_bytes.front()) +
                " bytes) cannot give each of " + std::to_string(most) + " calls a part of " +
                std::to_string(kPartElements) + " elements");
  }
  if (o.warmup < 0 || o.iterations < 1 || o.passes < 1 || !(o.timeout_seconds > 0)) {
    throw Error("grouped call probe: warmup >= 0, iterations >= 1, passes >= 1 and a positive timeout are required");
  }
}

}  // namespace

std::vector<GroupedCallPoint> probe_grouped_calls(RankHandle& h, const GroupedCallOptions& o) {
  validate(o);
  DMUON_CUDA_CHECK(cudaSetDevice(h.comms().device()));
  const SplitComm comm(h.comms(), 1, o.timeout_seconds, "the grouped call probe");
  cuda::DeviceBuffer buffer(o.group_bytes.back(), "grouped call probe buffer");
  cuda::OwnedStream stream;
  buffer.zero(stream.get());  // zeros: averages stay finite whatever the repetitions
  const cuda::EventChain events(2);
  std::vector<GroupedCallPoint> out;
  for (OpKind kind : o.kinds) {
    for (std::size_t bytes : o.group_bytes) out.push_back({kind, static_cast<double>(bytes), {}});
  }
  // samples[p][c]: point p's seconds per group of o.calls[c] calls, one per pass. Each pass times
  // every point once, so a host hiccup spoils neighbouring points of one pass only
  // (kernels/exec/collective_sweep.cpp does the same).
  std::vector<std::vector<std::vector<double>>> samples(out.size(), std::vector<std::vector<double>>(o.calls.size()));
  for (int pass = 0; pass < o.passes; ++pass) {
    for (std::size_t p = 0; p < out.size(); ++p) {
      const OpKind kind = out[p].kind;
      const auto bytes = static_cast<std::size_t>(out[p].group_bytes);
      for (std::size_t c = 0; c < o.calls.size(); ++c) {
        const int calls = o.calls[c];
        const std::size_t part = bytes / kElementBytes / static_cast<std::size_t>(calls) / kPartElements * kPartElements;
        const std::string where = "rank " + std::to_string(h.rank()) + ": grouped call probe, " + std::to_string(calls) +
                                  " " + std::string(to_string(kind)) + " calls of " + std::to_string(bytes) + " bytes";
        const auto group = [&] { launch_group(kind, buffer.as<char>(), part, calls, comm.get(), stream.get()); };
        samples[p][c].push_back(loop_seconds_per_call(group, o.warmup, o.iterations, stream.get(), events[0], events[1],
                                                      h, comm.get(), o.timeout_seconds, where));
      }
    }
  }
  for (std::size_t p = 0; p < out.size(); ++p) {
    for (std::size_t c = 0; c < o.calls.size(); ++c) out[p].seconds_by_calls.emplace_back(o.calls[c], median(samples[p][c]));
  }
  return out;
}

}  // namespace dmuon::exec
