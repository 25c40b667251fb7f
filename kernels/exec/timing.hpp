// What the executor measured, as plain data (no CUDA header): op spans from CUDA events.
#pragma once
#include <vector>

#include "core/plan/plan.hpp"

namespace dmuon::exec {

// When one op ran, in seconds from the start of its run on this rank (CUDA events).
struct OpSpan {
  int op = 0;         // index into the rank's op list
  int fused_ops = 1;  // > 1: this span covers op..op+fused_ops-1 (a fused AdamW launch)
  StreamKind stream = StreamKind::compute;
  double start_seconds = 0, end_seconds = 0;
  // A step schedule's compute item (RankExecutor::run_step): its unit, forward or backward;
  // `op` is then -1.
  int standin_unit = -1;
  bool standin_backward = false;
};

struct RunTiming {
  double seconds = 0;         // run start to the end of its last op on this rank
  std::vector<OpSpan> spans;  // filled when the run was asked to time ops
  // The host's side: wall seconds of the loop that enqueued the run's ops (the streams work
  // asynchronously behind it) and the launches it enqueued (a fused AdamW group is one). When
  // the GPU work per op is short, this rate, not the GPU, sets how fast a stream advances.
  double host_issue_seconds = 0;
  int launches = 0;
  // The same over the first kIssueSampleLaunches launches only: later ones can block in a full
  // CUDA launch queue while the GPU works, which measures the GPU, not the host (on 2 x H200
  // the whole loop read 29 us a launch, a GPU-bound rate).
  double host_issue_sample_seconds = 0;
  int host_issue_sample_launches = 0;
  // Host seconds from the loop's start until its last AdamW launch call returned (a fused run's
  // tensor list built and its kernels enqueued), before the per-op event records that follow:
  // what the GPU waits for when the run starts on an idle GPU. 0 without AdamW ops.
  double host_adamw_launched_seconds = 0;
};
inline constexpr int kIssueSampleLaunches = 64;

// Seconds covered by the union of the spans on `stream` (all streams when null).
double busy_seconds(const std::vector<OpSpan>& spans, const StreamKind* stream);

}  // namespace dmuon::exec
