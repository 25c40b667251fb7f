#include "kernels/exec/nccl_executor.hpp"


#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "core/plan/plan_fingerprint.hpp"
#include "kernels/comm/bootstrap.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_events.hpp"
#include "kernels/exec/collectives.hpp"
#include "kernels/exec/deps.hpp"

namespace dmuon::exec {
namespace {

using cuda::elapsed_seconds;

std::size_t at(int i) { return static_cast<std::size_t>(i); }

unsigned phase_bit(Phase p) {
  switch (p) {
    case Phase::forward: return kForward;
    case Phase::backward: return kBackward;
    case Phase::optimizer: return kOptimizer;
  }
  return 0;
}

cudaEvent_t new_event() {
  cudaEvent_t e = nullptr;
  DMUON_CUDA_CHECK(cudaEventCreate(&e));
  return e;
}

// Every rank must run the same Plan: a rank started with another scenario, strategy or world
// would otherwise issue collectives its peers never match and hang in NCCL. One all-gather of
// the fingerprint (two 32-bit halves, exact in doubles) before the first group communicator.
void require_same_plan(comm::RankComms& comms, const Plan& plan, double timeout_seconds,
                       const std::atomic<bool>* peer_failed) {
  const std::uint64_t mine = plan_fingerprint(plan);
  const std::vector<double> halves = {static_cast<double>(mine >> 32), static_cast<double>(mine & 0xffffffffu)};
  const std::vector<double> all = comm::all_gather_values(comms, halves, timeout_seconds, peer_failed);
  for (int r = 0; r < comms.world(); ++r) {
    const auto theirs = (static_cast<std::uint64_t>(all[2 * at(r)]) << 32) | static_cast<std::uint64_t>(all[2 * at(r) + 1]);
    if (theirs == mine) continue;
    std::ostringstream s;
    s << "rank " << comms.rank() << ": its Plan (" << to_string(plan.strategy) << ", fingerprint " << std::hex << mine
      << ") differs from rank " << std::dec << r << "'s (fingerprint " << std::hex << theirs
      << "): every rank must build the same Plan (same scenario, strategy and world)";
    throw Error(s.str());
  }
}

}  // namespace

struct RankExecutor::Events {
  std::vector<cudaEvent_t> start, done;  // per op
  std::vector<cudaEvent_t> unit_start, unit_done;  // per step-schedule compute item: 2 * unit + backward
  cudaEvent_t t0 = nullptr, compute_end = nullptr, comm_end = nullptr;
  explicit Events(std::size_t ops) {
    for (std::size_t i = 0; i < ops; ++i) {
      start.push_back(new_event());
      done.push_back(new_event());
    }
    t0 = new_event();
    compute_end = new_event();
    comm_end = new_event();
  }
  void ensure_units(int units) {
    while (unit_done.size() < 2 * at(units)) {
      unit_start.push_back(new_event());
      unit_done.push_back(new_event());
    }
  }
  ~Events() {
    for (auto* v : {&start, &done, &unit_start, &unit_done}) {
      for (cudaEvent_t e : *v) (void)cudaEventDestroy(e);
    }
    for (cudaEvent_t e : {t0, compute_end, comm_end}) (void)cudaEventDestroy(e);
  }
};

// What one run enqueued, in order: Plan ops (first op, ops covered) and compute items.
struct RankExecutor::Issued {
  std::vector<std::pair<int, int>> ops;
  std::vector<std::pair<int, bool>> units;  // (unit, backward)
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), sample_end = start;
  int launches = 0;
  void launched() {
    if (++launches == kIssueSampleLaunches) sample_end = std::chrono::steady_clock::now();
  }
};

RankExecutor::RankExecutor(comm::RankComms& comms, const Plan& plan, const ModelSpec& model, const Routing& routing,
                           const OptimizerConfig& config, ExecutorOptions options, const std::atomic<bool>* peer_failed)
    : comms_(comms), plan_(plan), model_(model), routing_(routing), config_(config), options_(options),
      peer_failed_(peer_failed) {
  if (plan.mesh.world() != comms.world() || static_cast<int>(plan.ranks.size()) != comms.world()) {
    throw Error("rank " + std::to_string(comms.rank()) + ": the plan has " + std::to_string(plan.ranks.size()) +
                " ranks, the job " + std::to_string(comms.world()));
  }
  if (!(options.timeout_seconds > 0)) throw Error("executor: timeout_seconds must be > 0");
  for (const auto& [key, policy] : {std::pair{"optimizer.nonfinite (Muon)", config.muon.nonfinite},
                                    std::pair{"optimizer.adamw.nonfinite", config.adamw.nonfinite}}) {
    if (policy != NonfinitePolicy::error) {
      throw Error("rank " + std::to_string(comms.rank()) + ": " + key +
                  ": 'skip' is not supported by the NCCL executor (ranks holding different shards of a "
                  "parameter would have to agree first); use 'error'");
    }
  }
  DMUON_CUDA_CHECK(cudaSetDevice(comms.device()));
  require_same_plan(comms, plan, options.timeout_seconds, peer_failed);
  const auto& ops = plan.ranks[at(comms.rank())];
  // Every rank's shares of sharded Newton-Schulz calls, checked before any buffer or communicator.
  shard_members_ = checked_ns_shard_members(plan, comms.rank(), routing);
  waits_ = cross_stream_waits(ops, routing);
  buffers_ = std::make_unique<DeviceBuffers>(plan_footprint(plan, comms.rank(), model, routing),
                                             buffer_types_for(config), comms.rank());
  int least = 0, greatest = 0;
  DMUON_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  DMUON_CUDA_CHECK(cudaStreamCreateWithPriority(&compute_, cudaStreamNonBlocking, least));
  // Communication first: an NCCL kernel waiting behind a long GEMM delays the peer too.
  DMUON_CUDA_CHECK(cudaStreamCreateWithPriority(&comm_, cudaStreamNonBlocking, greatest));
  events_ = std::make_unique<Events>(ops.size());
  compute_runner_ = std::make_unique<ComputeRunner>(model, routing, config, compute_, options.compute);
  // Staging for packed collectives (strided regions), per stream, sized once from this rank's ops.
  std::size_t pack_bytes[2] = {0, 0};
  for (const Op& op : ops) {
    if (!is_collective(op.kind)) continue;
    std::size_t& most = pack_bytes[op.stream == StreamKind::compute ? 0 : 1];
    most = std::max(most, packed_collective_bytes(op, *buffers_));
  }
  const std::string who = "rank " + std::to_string(comms.rank()) + " packed-collective staging";
  for (int s = 0; s < 2; ++s) {
    if (pack_bytes[s] > 0) pack_buffers_[s] = cuda::DeviceBuffer(pack_bytes[s], who);
  }
  comms_.prepare(plan);
}

RankExecutor::~RankExecutor() {
  compute_runner_.reset();
  events_.reset();
  if (compute_) (void)cudaStreamDestroy(compute_);
  if (comm_) (void)cudaStreamDestroy(comm_);
}

cudaStream_t RankExecutor::stream_of(const Op& op) const { return op.stream == StreamKind::compute ? compute_ : comm_; }

std::string RankExecutor::describe(int index) const {
  const Op& op = plan_.ranks[at(rank())][at(index)];
  std::ostringstream s;
  s << "rank " << rank() << " op " << index << " (" << to_string(op.kind);
  if (!op.label.empty()) s << " '" << op.label << "'";
  if (synchronizes(op)) s << ", collective " << op.collective;
  s << ")";
  return s.str();
}

void RankExecutor::enqueue(int index, unsigned phases, long adam_step, bool time_ops, int& fused) {
  const auto& ops = plan_.ranks[at(rank())];
  const Op& op = ops[at(index)];
  fused = 1;
  if (op.kind == OpKind::adamw && options_.fuse_adamw) {
    while (index + fused < static_cast<int>(ops.size()) && ops[at(index + fused)].kind == OpKind::adamw &&
           ops[at(index + fused)].stream == op.stream && (phase_bit(ops[at(index + fused)].phase) & phases)) {
      ++fused;
    }
  }
  cudaStream_t stream = stream_of(op);
  for (int k = index; k < index + fused; ++k) {
    for (int w : waits_[at(k)]) {
      if (issued_[at(w)]) {
        DMUON_CUDA_CHECK(cudaStreamWaitEvent(stream, events_->done[at(w)], 0));
      } else if (phase_bit(ops[at(w)].phase) & phases) {
        // Only a step schedule can order ops so (a list-order run issues every earlier op first).
        throw Error(describe(index) + " must wait for " + describe(w) + ", which the step schedule issues after it");
      }
    }
  }
  if (time_ops) DMUON_CUDA_CHECK(cudaEventRecord(events_->start[at(index)], stream));
  const std::string where = describe(index);
  if (is_collective(op.kind)) {
    const cuda::DeviceBuffer& pack = pack_buffers_[op.stream == StreamKind::compute ? 0 : 1];
    launch_collective(op, plan_, rank(), comms_, *buffers_, stream, PackStaging{pack.get(), pack.bytes()}, where);
  } else if (is_sharded_ns(op)) {
    compute_runner_->launch_sharded_ns(shard_members_.at(index), sharded_ns_reduce(comms_.comm(plan_, op.group), where),
                                       *buffers_, where);
  } else if (fused > 1) {
    std::vector<const Op*> group;
    for (int k = index; k < index + fused; ++k) group.push_back(&ops[at(k)]);
    compute_runner_->launch_adamw(group, *buffers_, adam_step, where + " +" + std::to_string(fused - 1) + " fused");
  } else {
    compute_runner_->launch(op, *buffers_, adam_step, where);
  }
  if (op.kind == OpKind::adamw) adamw_launched_ = std::chrono::steady_clock::now();
  for (int k = index; k < index + fused; ++k) {
    DMUON_CUDA_CHECK(cudaEventRecord(events_->done[at(k)], stream));
    issued_[at(k)] = 1;
  }
}

RunTiming RankExecutor::run(unsigned phases, long adam_step, bool time_ops) {
  return run_issuing(phases, time_ops, [&](Issued& issued) { issue_in_order(phases, adam_step, time_ops, issued); });
}

RunTiming RankExecutor::run_step(const StepSchedule& schedule, UnitCompute& compute, long adam_step, bool time_ops) {
  return run_issuing(kAllPhases, time_ops, [&](Issued& issued) {
    issue_schedule(schedule, compute, adam_step, time_ops, issued);
    issue_in_order(kOptimizer, adam_step, time_ops, issued);
  });
}

void RankExecutor::issue_in_order(unsigned phases, long adam_step, bool time_ops, Issued& issued) {
  const auto& ops = plan_.ranks[at(rank())];
  for (int i = 0; i < static_cast<int>(ops.size());) {
    if (!(phase_bit(ops[at(i)].phase) & phases)) {
      ++i;
      continue;
    }
    if (peer_failed_ && *peer_failed_) fail("a peer rank failed", phases);
    int fused = 1;
    enqueue(i, phases, adam_step, time_ops, fused);
    issued.ops.push_back({i, fused});
    issued.launched();
    i += fused;
  }
}

// Each item waits for the items it names (cross-stream events), then runs on its stream: a Plan
// op as run() enqueues it, a compute item on the compute stream through `compute`.
void RankExecutor::issue_schedule(const StepSchedule& schedule, UnitCompute& compute, long adam_step, bool time_ops,
                                  Issued& issued) {
  const auto& ops = plan_.ranks[at(rank())];
  const unsigned phases = kForward | kBackward;
  events_->ensure_units(schedule.units);
  std::vector<cudaEvent_t> done(schedule.items.size(), nullptr);
  for (std::size_t k = 0; k < schedule.items.size(); ++k) {
    const StepItem& item = schedule.items[k];
    if (peer_failed_ && *peer_failed_) fail("a peer rank failed", phases);
    const bool is_op = item.kind == StepItemKind::op;
    if (is_op && (item.index < 0 || at(item.index) >= ops.size() || ops[at(item.index)].phase == Phase::optimizer)) {
      throw Error("step schedule item " + std::to_string(k) + " names op " + std::to_string(item.index) +
                  ", not a forward/backward op of rank " + std::to_string(rank()));
    }
    if (!is_op && (item.index < 0 || item.index >= schedule.units)) {
      throw Error("step schedule item " + std::to_string(k) + " names unit " + std::to_string(item.index) + " of " +
                  std::to_string(schedule.units));
    }
    const cudaStream_t stream = is_op ? stream_of(ops[at(item.index)]) : compute_;
    for (int a : item.after) {
      if (a < 0 || at(a) >= k) throw Error("step schedule item " + std::to_string(k) + " waits for a later item " + std::to_string(a));
      DMUON_CUDA_CHECK(cudaStreamWaitEvent(stream, done[at(a)], 0));
    }
    if (is_op) {
      int fused = 1;
      enqueue(item.index, phases, adam_step, time_ops, fused);
      if (fused != 1) throw Error(describe(item.index) + ": a fused launch cannot be placed by a step schedule");
      done[k] = events_->done[at(item.index)];
      issued.ops.push_back({item.index, 1});
    } else {
      const bool backward = item.kind == StepItemKind::backward_compute;
      const std::size_t slot = 2 * at(item.index) + (backward ? 1 : 0);
      if (time_ops) DMUON_CUDA_CHECK(cudaEventRecord(events_->unit_start[slot], compute_));
      compute.enqueue(item.index, backward ? Phase::backward : Phase::forward, compute_);
      DMUON_CUDA_CHECK(cudaEventRecord(events_->unit_done[slot], compute_));
      done[k] = events_->unit_done[slot];
      issued.units.push_back({item.index, backward});
    }
    issued.launched();
  }
}

RunTiming RankExecutor::run_issuing(unsigned phases, bool time_ops, const std::function<void(Issued&)>& issue) {
  DMUON_CUDA_CHECK(cudaSetDevice(comms_.device()));
  const auto& ops = plan_.ranks[at(rank())];
  DMUON_CUDA_CHECK(cudaEventRecord(events_->t0, compute_));
  DMUON_CUDA_CHECK(cudaStreamWaitEvent(comm_, events_->t0, 0));
  issued_.assign(ops.size(), 0);
  adamw_launched_.reset();
  Issued issued;
  try {
    issue(issued);
  } catch (const Error& e) {
    comms_.abort_all();
    const std::string what = e.what();
    throw Error(what.rfind("rank ", 0) == 0 ? what : "rank " + std::to_string(rank()) + ": " + what);
  }
  const double issue_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - issued.start).count();
  DMUON_CUDA_CHECK(cudaEventRecord(events_->comm_end, comm_));
  DMUON_CUDA_CHECK(cudaEventRecord(events_->compute_end, compute_));
  wait(phases);
  if (phases & kOptimizer) {
    // Every op of the phase completed, the peers' matching collectives too: nothing is left
    // waiting on this rank, so the communicators stay intact for the caller's failure path.
    if (const std::string bad = compute_runner_->nonfinite_gradients(); !bad.empty()) {
      throw Error("rank " + std::to_string(rank()) + ": non-finite gradient values (NaN or Inf) in " + bad +
                  "; those elements were not applied (optimizer nonfinite: error)");
    }
  }
  RunTiming t;
  t.seconds = std::max(elapsed_seconds(events_->t0, events_->compute_end), elapsed_seconds(events_->t0, events_->comm_end));
  t.host_issue_seconds = issue_seconds;
  if (adamw_launched_) t.host_adamw_launched_seconds = std::chrono::duration<double>(*adamw_launched_ - issued.start).count();
  t.launches = issued.launches;
  if (t.launches >= kIssueSampleLaunches) {
    t.host_issue_sample_seconds = std::chrono::duration<double>(issued.sample_end - issued.start).count();
    t.host_issue_sample_launches = kIssueSampleLaunches;
  }
  if (time_ops) {
    for (const auto& [i, n] : issued.ops) {
      const Op& op = ops[at(i)];
      t.spans.push_back({i, n, op.stream, elapsed_seconds(events_->t0, events_->start[at(i)]),
                         elapsed_seconds(events_->t0, events_->done[at(i)])});
    }
    for (const auto& [unit, backward] : issued.units) {
      const std::size_t slot = 2 * at(unit) + (backward ? 1 : 0);
      OpSpan span{-1, 1, StreamKind::compute, elapsed_seconds(events_->t0, events_->unit_start[slot]),
                  elapsed_seconds(events_->t0, events_->unit_done[slot])};
      span.standin_unit = unit;
      span.standin_backward = backward;
      t.spans.push_back(span);
    }
  }
  return t;
}

// Polls instead of blocking in cudaEventSynchronize: a kernel waiting for a dead peer never
// completes, and only a polling host can notice the NCCL error, the peer's failure or the
// deadline, and abort the communicators so the kernel returns.
void RankExecutor::wait(unsigned phases) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.timeout_seconds);
  auto sleep = std::chrono::microseconds(20);
  while (true) {
    const cudaError_t a = cudaEventQuery(events_->compute_end);
    const cudaError_t b = cudaEventQuery(events_->comm_end);
    if (a == cudaSuccess && b == cudaSuccess) return;
    if ((a != cudaSuccess && a != cudaErrorNotReady) || (b != cudaSuccess && b != cudaErrorNotReady)) {
      fail(std::string("CUDA error: ") + cudaGetErrorString(a != cudaSuccess && a != cudaErrorNotReady ? a : b), phases);
    }
    if (const std::string e = comms_.async_error(); !e.empty()) fail("NCCL error: " + e, phases);
    if (peer_failed_ && *peer_failed_) fail("a peer rank failed", phases);
    if (std::chrono::steady_clock::now() > deadline) {
      std::ostringstream s;
      s << "timeout after " << options_.timeout_seconds << " s";
      fail(s.str(), phases);
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(1000));
  }
}

void RankExecutor::fail(const std::string& cause, unsigned phases) {
  comms_.abort_all();
  const auto& ops = plan_.ranks[at(rank())];
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (!(phase_bit(ops[at(i)].phase) & phases)) continue;
    if (cudaEventQuery(events_->done[at(i)]) != cudaSuccess) {
      (void)cudaGetLastError();
      throw Error(describe(i) + " did not complete: " + cause);
    }
  }
  throw Error("rank " + std::to_string(rank()) + ": " + cause);
}

}  // namespace dmuon::exec
