#include "sim/runner.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <utility>

#include "core/error.hpp"

#include <simgrid/kernel/Timer.hpp>

namespace dmuon::sim {

void timed_sleep_until(double t_s) {
  sg4::Actor* self = sg4::Actor::self();
  simgrid::kernel::timer::Timer::set(t_s, [self] { self->resume(); });
  sg4::this_actor::suspend();
}

void timed_sleep_for(double seconds) { timed_sleep_until(sg4::Engine::get_clock() + seconds); }

namespace {

constexpr int kAnyStream = -2;  // reference_runner: woken by any op's end, as before

// Suspends this stream's actor until op_done resumes it.
void park(RankSync& rs, int stream) {
  rs.parked[stream] = sg4::Actor::self();
  sg4::this_actor::suspend();
}

// Sleeps until `t_s` when it is still ahead; returns the seconds slept.
double sleep_until(double t_s) {
  const double now = sg4::Engine::get_clock();
  if (!(t_s > now)) return 0;
  timed_sleep_until(t_s);
  return t_s - now;
}

}  // namespace

std::vector<std::size_t> Runner::simulated_ranks() const {
  std::vector<std::size_t> out;
  out.reserve(simulated_gpus());
  for (std::size_t r = 0; r < prog_.world(); ++r) {
    if (!lockstep_ || prog_.runs_as_built(r)) out.push_back(r);
  }
  return out;
}

std::size_t Runner::stream_actors() const {
  std::size_t actors = 0;
  for (std::size_t r : simulated_ranks()) {
    std::array<bool, kStreams> used{};
    for (const SimOp& op : prog_.ops(r)) used[static_cast<std::size_t>(op.stream)] = true;
    actors += static_cast<std::size_t>(std::count(used.begin(), used.end(), true));
  }
  return actors;
}

void Runner::start(const Platform& platform) {
  hosts_ = platform.gpus;
  proxies_ = platform.proxies;
  proxy_routes_ = platform.proxy_routes;
  for (int i = static_cast<int>(proxies_.size()) - 1; i >= 0; --i) free_proxies_.push_back(i);
  ranks_.resize(simulated_gpus());
  reduce_dependencies();
  const std::vector<std::size_t> gpus = simulated_ranks();
  for (std::size_t r : gpus) {
    RankSync& rs = ranks_[slot(r)];
    const auto& ops = prog_.ops(r);
    const std::size_t n = ops.size();
    rs.done.assign(n, 0);
    rs.start.assign(n, 0);
    rs.end.assign(n, 0);
    rs.host_wait.assign(n, 0);
    rs.completed.assign(kStreams, 0);
    rs.parked.assign(kStreams, nullptr);
    rs.wait_stream.assign(kStreams, -1);
    rs.wait_count.assign(kStreams, 0);
    std::vector<std::vector<int>> by_stream(kStreams);
    for (std::size_t i = 0; i < n; ++i) by_stream[static_cast<std::size_t>(ops[i].stream)].push_back(static_cast<int>(i));
    for (int s = 0; s < kStreams; ++s) {
      if (by_stream[s].empty()) continue;
      sg4::Actor::create("r" + std::to_string(r) + "s" + std::to_string(s), hosts_[r],
                         [this, r, s, ops = std::move(by_stream[s])] { stream_actor(static_cast<int>(r), s, ops); });
    }
  }
  if (contended()) {
    for (std::size_t r : gpus) {
      RankSync& rs = ranks_[slot(r)];
      rs.slowed.assign(prog_.ops(r).size(), 0);
      rs.nccl_mutex = sg4::Mutex::create(), rs.nccl_changed = sg4::ConditionVariable::create();
    }
  }
  colls_.resize(prog_.collectives.size());
  arrivals_.resize(colls_.size());
  for (std::size_t c = 0; c < colls_.size(); ++c) {
    int n = 0;
    for (int m : prog_.collectives[c].call.members) n += !lockstep_ || prog_.runs_as_built(static_cast<std::size_t>(m));
    arrivals_[c] = n;
  }
  executed_as_ = prog_.originals();
  if (!lockstep_) std::iota(executed_as_.begin(), executed_as_.end(), 0);  // every copy runs
  barrier_.mutex = sg4::Mutex::create();
  barrier_.cv = sg4::ConditionVariable::create();
  long first = 0;
  bool second = false;
  std::vector<long> clock0(prog_.ranks.size(), 0);  // per list: its clock-0 ops
  for (std::size_t l = 0; l < prog_.ranks.size(); ++l) {
    for (const SimOp& op : prog_.ranks[l]) {
      if (op.issue_clock == 0) {
        ++clock0[l];
      } else {
        second = true;
      }
    }
  }
  for (std::size_t r : gpus) first += clock0[prog_.list(r)];  // a list runs on every rank it stands for
  if (second && prog_.issue_s_per_launch) barrier_.pending = first;
}

// Per list of the program (a folded program's replicas share their template's: StepProgram::list).
void Runner::reduce_dependencies() {
  need_begin_.assign(prog_.ranks.size(), {});
  needs_.clear();
  std::vector<int> position;  // op -> its place in its stream
  for (std::size_t r = 0; r < prog_.ranks.size(); ++r) {
    const auto& ops = prog_.ranks[r];
    position.assign(ops.size(), 0);
    int count[kStreams] = {};
    for (std::size_t i = 0; i < ops.size(); ++i) position[i] = count[ops[i].stream]++;
    auto& begin = need_begin_[r];
    begin.assign(ops.size() + 1, 0);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      begin[i] = needs_.size();
      int need[kStreams] = {};
      for (int d : ops[i].deps) {
        const auto k = static_cast<std::size_t>(d);
        const int s = ops[k].stream;
        // A dependency later in its own stream never ends first: kept, it deadlocks as before.
        if (s == ops[i].stream && position[k] < position[i]) continue;
        need[s] = std::max(need[s], position[k] + 1);
      }
      for (int s = 0; s < kStreams; ++s) {
        if (need[s] > 0) needs_.push_back({s, need[s]});
      }
    }
    begin[ops.size()] = needs_.size();
  }
}

double Runner::clock_origin(int issue_clock) {
  if (issue_clock == 0) return 0;
  if (barrier_.pending > 0) {
    std::unique_lock<sg4::Mutex> lock(*barrier_.mutex);
    ++barrier_.waiting;
    while (barrier_.pending > 0) barrier_.cv->wait(lock);
    --barrier_.waiting;
  }
  return barrier_.at_s;
}

void Runner::pass_barrier() {
  if (barrier_.pending == 0 || --barrier_.pending > 0) return;
  barrier_.at_s = sg4::Engine::get_clock();
  if (barrier_.waiting > 0) barrier_.cv->notify_all();
}

void Runner::wait_needs(int rank, int stream, int op) {
  RankSync& rs = ranks_[slot(static_cast<std::size_t>(rank))];
  const auto& begin = need_begin_[prog_.list(static_cast<std::size_t>(rank))];
  for (std::size_t k = begin[static_cast<std::size_t>(op)]; k < begin[static_cast<std::size_t>(op) + 1]; ++k) {
    const Need n = needs_[k];
    rs.wait_stream[stream] = n.stream;
    rs.wait_count[stream] = n.count;
    while (rs.completed[n.stream] < n.count) park(rs, stream);
    rs.wait_stream[stream] = -1;
  }
}

// The per-op dependency lists and a wake-up of every waiting stream at every op's end: what
// the runner did before reduce_dependencies, kept as the reference the tests compare against.
void Runner::wait_all_deps(int rank, int stream, const std::vector<int>& deps) {
  RankSync& rs = ranks_[slot(static_cast<std::size_t>(rank))];
  std::size_t next = 0;  // deps before it are done: a wake-up does not rescan them
  auto ready = [&] {
    while (next < deps.size() && rs.done[static_cast<std::size_t>(deps[next])]) ++next;
    return next == deps.size();
  };
  rs.wait_stream[stream] = kAnyStream;
  while (!ready()) park(rs, stream);
  rs.wait_stream[stream] = -1;
}

void Runner::op_done(int rank, int stream, std::size_t op) {
  RankSync& rs = ranks_[slot(static_cast<std::size_t>(rank))];
  rs.done[op] = 1;
  const int completed = ++rs.completed[stream];
  for (int t = 0; t < kStreams; ++t) {
    const int w = rs.wait_stream[t];
    if (rs.parked[t] && (w == kAnyStream || (w == stream && rs.wait_count[t] <= completed))) {
      std::exchange(rs.parked[t], nullptr)->resume();
    }
  }
}

// An op starts once its dependencies are done, its stream is free (the ops before it on this
// actor) and, with the host issue model, its host has enqueued it; it ends no earlier than its
// last launch allows (SimOp::issued_end_s).
void Runner::stream_actor(int rank, int stream, const std::vector<int>& ops) {
  RankSync& rs = ranks_[slot(static_cast<std::size_t>(rank))];
  const bool host = prog_.issue_s_per_launch.has_value();
  const bool slowed = contended();
  const bool stretches = collective_slowdown() > 0;
  for (int i : ops) {
    const SimOp& op = prog_.ops(static_cast<std::size_t>(rank))[static_cast<std::size_t>(i)];
    if (reference_) {
      wait_all_deps(rank, stream, op.deps);
    } else {
      wait_needs(rank, stream, i);
    }
    const auto k = static_cast<std::size_t>(i);
    const double origin_s = host ? clock_origin(op.issue_clock) : 0;
    if (host) rs.host_wait[k] = sleep_until(origin_s + op.issued_s);
    rs.start[k] = sg4::Engine::get_clock();
    if (op.collective >= 0) {
      const int c = prog_.collective(static_cast<std::size_t>(rank), op.collective);
      const bool nccl = slowed && prog_.collectives[static_cast<std::size_t>(c)].call.members.size() > 1;
      if (nccl) nccl_enters(rank);
      arrive(c);
      if (nccl) nccl_leaves(rank);
      rs.start[k] = std::max(rs.start[k], colls_[static_cast<std::size_t>(c)].start);
    } else if (op.seconds > 0) {
      // The GPU work first, at the rate NCCL beside it allows, then what is left of the unit's
      // wait for the host: a host-paced unit takes max(its paced time, its GPU work slowed).
      const double gpu_s = op.seconds - op.host_wait_s;
      if (stretches) compute_starts(rank);
      if (slowed) {
        run_contended(rank, gpu_s);
      } else {
        timed_sleep_for(gpu_s);
      }
      if (stretches) compute_ends(rank);
      const double elapsed = sg4::Engine::get_clock() - rs.start[k];
      if (op.host_wait_s > 0 && elapsed < op.seconds) timed_sleep_for(op.seconds - elapsed);
      if (slowed) rs.slowed[k] = std::max(0.0, sg4::Engine::get_clock() - rs.start[k] - op.seconds);
    }
    if (host) rs.host_wait[k] += sleep_until(origin_s + op.issued_end_s);
    rs.end[k] = sg4::Engine::get_clock();
    op_done(rank, stream, k);
    if (host && op.issue_clock == 0) pass_barrier();
  }
}

void Runner::compute_starts(int rank) {
  RankSync& rs = ranks_[slot(static_cast<std::size_t>(rank))];
  if (rs.computing++ == 0) rs.computing_since = sg4::Engine::get_clock();
}

void Runner::compute_ends(int rank) {
  RankSync& rs = ranks_[slot(static_cast<std::size_t>(rank))];
  if (--rs.computing == 0) rs.compute_busy_s += sg4::Engine::get_clock() - rs.computing_since;
}

double Runner::compute_busy_until_now(int rank) const {
  const RankSync& rs = ranks_[slot(static_cast<std::size_t>(rank))];
  return rs.compute_busy_s + (rs.computing > 0 ? sg4::Engine::get_clock() - rs.computing_since : 0);
}

void Runner::nccl_enters(int rank) {
  RankSync& rs = ranks_[slot(static_cast<std::size_t>(rank))];
  if (rs.nccl_in_flight++ == 0) rs.nccl_changed->notify_all();
}

void Runner::nccl_leaves(int rank) {
  RankSync& rs = ranks_[slot(static_cast<std::size_t>(rank))];
  if (--rs.nccl_in_flight == 0) rs.nccl_changed->notify_all();
}

// The op's work in seconds alone, done at the rate of the moment: a wait for the rest at that
// rate, cut short when a collective enters or leaves flight, then again at the new rate.
double Runner::run_contended(int rank, double seconds) {
  RankSync& rs = ranks_[slot(static_cast<std::size_t>(rank))];
  const double slowdown = *prog_.compute_slowdown_beside_nccl;
  const double began = sg4::Engine::get_clock();
  std::unique_lock<sg4::Mutex> lock(*rs.nccl_mutex);
  double work = seconds;
  while (work > 0) {
    const double rate = rs.nccl_in_flight > 0 ? 1 / (1 + slowdown) : 1.0;
    const double from = sg4::Engine::get_clock();
    const bool timed_out = rs.nccl_changed->wait_for(lock, work / rate) == std::cv_status::timeout;
    if (timed_out) break;
    work -= (sg4::Engine::get_clock() - from) * rate;
  }
  return sg4::Engine::get_clock() - began;
}

void Runner::check_finished() const {
  for (std::size_t r : simulated_ranks()) {
    const RankSync& rs = ranks_[slot(r)];
    for (std::size_t i = 0; i < rs.done.size(); ++i) {
      if (rs.done[i]) continue;
      const SimOp& op = prog_.ops(r)[i];
      throw Error("sim: deadlock: rank " + std::to_string(r) + " op " + std::to_string(i) + " '" + op.category + " " +
                  op.label + "' never ran");
    }
  }
}

// The last simulated step, timed from the end of the step before it (the steady-state period;
// 0 with one step): the latest end over ranks of each step's ops.
SimOutcome Runner::outcome() const {
  SimOutcome o;
  // A program built by hand (tests) holds one step and may leave last_step_begin empty: 0.
  // In lockstep ranks_ holds the template replicas' GPUs, whose dates the other replicas repeat:
  // the maxima are theirs, and the GPU that ends last the first of them to do so, as over every
  // GPU (a replica's template comes before it).
  const std::vector<std::size_t> gpus = simulated_ranks();
  double origin = 0;
  for (std::size_t r : gpus) {
    for (std::size_t i = 0; i < prog_.step_begin(r); ++i) origin = std::max(origin, ranks_[slot(r)].end[i]);
  }
  double latest = -1;
  std::vector<double> optimizer_s(ranks_.size(), 0);  // per slot
  for (std::size_t r : gpus) {
    const RankSync& rs = ranks_[slot(r)];
    double end = 0, busy = 0, opt = 0;
    std::map<std::string, double> by_source;
    for (std::size_t i = prog_.step_begin(r); i < rs.end.size(); ++i) {
      const SimOp& op = prog_.ops(r)[i];
      end = std::max(end, rs.end[i] - origin);
      if (op.phase != Phase::optimizer) o.grads_ready_s = std::max(o.grads_ready_s, rs.end[i] - origin);
      // Waiting for the host: the calibration's executor_issue_us priced it.
      if (rs.host_wait[i] > 0) by_source["measured"] += rs.host_wait[i];
      if (op.collective >= 0) {
        const CollectiveSync& cs = colls_[static_cast<std::size_t>(executed_as_[static_cast<std::size_t>(prog_.collective(r, op.collective))])];
        by_source[op.source] += cs.end - cs.start;
        continue;
      }
      // Compute beside NCCL: the extra seconds are the calibration's measured slowdown.
      const double slowed = rs.slowed.empty() ? 0.0 : rs.slowed[i];
      by_source[op.source] += op.seconds;
      if (slowed > 0) by_source["measured"] += slowed;
      busy += op.seconds + slowed;
      if (op.phase == Phase::optimizer) opt += op.seconds + slowed;
    }
    optimizer_s[slot(r)] = opt;
    if (end > latest) latest = end, o.critical_compute_busy_s = busy, o.critical_seconds_by_source = std::move(by_source);
    o.step_s = std::max(o.step_s, end);
  }
  for (std::size_t r = 0; r < prog_.world(); ++r) o.optimizer_compute_s.push_back(optimizer_s[slot(r)]);
  for (std::size_t c = prog_.last_step_collectives; c < colls_.size(); ++c) {
    const SimCollective& sc = prog_.collectives[c];
    const CollectiveSync& cs = colls_[static_cast<std::size_t>(executed_as_[c])];
    CollectiveRecord rec;
    rec.kind = std::string(to_string(sc.call.kind));
    rec.algorithm = cs.algorithm;
    rec.group = sc.group;
    rec.label = sc.label;
    rec.phase = std::string(to_string(sc.phase));
    rec.ranks = static_cast<int>(sc.call.members.size());
    rec.merged = sc.merged;
    rec.bytes = sc.call.bytes;
    rec.start_s = cs.start - origin;  // before 0: under the previous step's tail
    rec.end_s = cs.end - origin;
    o.collectives.push_back(rec);
  }
  return o;
}

}  // namespace dmuon::sim
