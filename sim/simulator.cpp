#include "sim/simulator.hpp"

#include <simgrid/s4u.hpp>

#include <chrono>
#include <cmath>
#include <map>
#include <tuple>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "sim/isolated_run.hpp"
#include "sim/measured_collectives.hpp"
#include "sim/network_model.hpp"
#include "sim/platform.hpp"
#include "sim/trace_writer.hpp"

namespace dmuon::sim {
namespace {

namespace sg4 = simgrid::s4u;
using nlohmann::json;

constexpr std::size_t kDenseTaskHosts = 128;

// SimGrid actors run one at a time and only yield inside SimGrid calls, so flags are read and
// written without locking; the mutex exists because a condition variable needs one, and is
// taken only to wait. Skipping it (and notify when nobody waits) halves the context switches.
struct RankSync {
  sg4::MutexPtr mutex;
  sg4::ConditionVariablePtr cv;
  int waiting = 0;
  std::vector<char> done;
  std::vector<double> start, end;
  std::vector<double> host_wait;  // per op: seconds it waited for the host to enqueue it
};

struct CollectiveSync {
  int arrived = 0;
  bool done = false;
  sg4::MutexPtr mutex;
  sg4::ConditionVariablePtr cv;
  double start = 0, end = 0;
  std::string algorithm;
};

class Runner {
 public:
  Runner(const StepProgram& prog, const Topology& topo, const NcclSpec& nccl, SimMode mode)
      : prog_(prog), topo_(topo), nccl_(nccl), mode_(mode) {}

  void start(const std::vector<sg4::Host*>& hosts);
  SimOutcome outcome() const;
  void check_finished() const;
  const std::vector<RankSync>& ranks() const { return ranks_; }

 private:
  void stream_actor(int rank, const std::vector<int>& ops);
  void wait_for(int rank, const std::vector<int>& deps);
  // Host issue model (StepProgram::issue_s_per_launch): the origin of an op's issue clock (1:
  // once every clock-0 op of every rank is done, as the benchmark's barrier between its runs).
  double clock_origin(int issue_clock);
  void pass_barrier();
  void arrive(int c);
  void execute(int c, CollectiveSync& cs);
  void run_flows(const CollectiveSchedule& s);
  void run_fast(const FastSummary& f, bool add_schedule_extra);
  // Schedules (and their fast summaries) by what determines them: blocks of a model repeat
  // the same collectives layer after layer.
  struct Planned {
    CollectiveSchedule schedule;
    FastSummary summary;
    bool measured = false;  // follows a calibration curve (measured_collectives.hpp)
    double wait_s = 0;      // measured, without traffic
  };
  Planned plan(const CollectiveCall& call, std::optional<double> measured_s) const;
  std::map<std::tuple<int, std::vector<int>, double, std::vector<std::pair<int, double>>>, Planned> cache_;

  const StepProgram& prog_;
  const Topology& topo_;
  const NcclSpec& nccl_;
  SimMode mode_;
  std::vector<sg4::Host*> hosts_;
  std::vector<RankSync> ranks_;
  std::vector<CollectiveSync> colls_;
  struct Barrier {
    long pending = 0;  // clock-0 ops still to finish, when clock-1 ops exist
    double at_s = 0;
    int waiting = 0;
    sg4::MutexPtr mutex;
    sg4::ConditionVariablePtr cv;
  } barrier_;
};

// Sleeps until `t_s` when it is still ahead; returns the seconds slept.
double sleep_until(double t_s) {
  const double now = sg4::Engine::get_clock();
  if (!(t_s > now)) return 0;
  sg4::this_actor::sleep_until(t_s);
  return t_s - now;
}

void Runner::start(const std::vector<sg4::Host*>& hosts) {
  hosts_ = hosts;
  ranks_.resize(prog_.ranks.size());
  for (std::size_t r = 0; r < prog_.ranks.size(); ++r) {
    RankSync& rs = ranks_[r];
    rs.mutex = sg4::Mutex::create();
    rs.cv = sg4::ConditionVariable::create();
    const std::size_t n = prog_.ranks[r].size();
    rs.done.assign(n, 0);
    rs.start.assign(n, 0);
    rs.end.assign(n, 0);
    rs.host_wait.assign(n, 0);
    std::vector<std::vector<int>> by_stream(kStreams);
    for (std::size_t i = 0; i < n; ++i) by_stream[static_cast<std::size_t>(prog_.ranks[r][i].stream)].push_back(static_cast<int>(i));
    for (int s = 0; s < kStreams; ++s) {
      if (by_stream[s].empty()) continue;
      sg4::Actor::create("r" + std::to_string(r) + "s" + std::to_string(s), hosts_[r],
                         [this, r, ops = by_stream[s]] { stream_actor(static_cast<int>(r), ops); });
    }
  }
  colls_.resize(prog_.collectives.size());
  for (auto& c : colls_) {
    c.mutex = sg4::Mutex::create();
    c.cv = sg4::ConditionVariable::create();
  }
  barrier_.mutex = sg4::Mutex::create();
  barrier_.cv = sg4::ConditionVariable::create();
  long first = 0;
  bool second = false;
  for (const auto& ops : prog_.ranks) {
    for (const SimOp& op : ops) {
      if (op.issue_clock == 0) {
        ++first;
      } else {
        second = true;
      }
    }
  }
  if (second && prog_.issue_s_per_launch) barrier_.pending = first;
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

void Runner::wait_for(int rank, const std::vector<int>& deps) {
  RankSync& rs = ranks_[static_cast<std::size_t>(rank)];
  std::size_t next = 0;  // deps before it are done: a wake-up does not rescan them
  auto ready = [&] {
    while (next < deps.size() && rs.done[static_cast<std::size_t>(deps[next])]) ++next;
    return next == deps.size();
  };
  if (ready()) return;
  std::unique_lock<sg4::Mutex> lock(*rs.mutex);
  ++rs.waiting;
  while (!ready()) rs.cv->wait(lock);
  --rs.waiting;
}

// An op starts once its dependencies are done, its stream is free (the ops before it on this
// actor) and, with the host issue model, its host has enqueued it; it ends no earlier than its
// last launch allows (SimOp::issued_end_s).
void Runner::stream_actor(int rank, const std::vector<int>& ops) {
  RankSync& rs = ranks_[static_cast<std::size_t>(rank)];
  const bool host = prog_.issue_s_per_launch.has_value();
  for (int i : ops) {
    const SimOp& op = prog_.ranks[static_cast<std::size_t>(rank)][static_cast<std::size_t>(i)];
    wait_for(rank, op.deps);
    const auto k = static_cast<std::size_t>(i);
    const double origin_s = host ? clock_origin(op.issue_clock) : 0;
    if (host) rs.host_wait[k] = sleep_until(origin_s + op.issued_s);
    rs.start[k] = sg4::Engine::get_clock();
    if (op.collective >= 0) {
      arrive(op.collective);
      rs.start[k] = std::max(rs.start[k], colls_[static_cast<std::size_t>(op.collective)].start);
    } else if (op.seconds > 0) {
      sg4::this_actor::sleep_for(op.seconds);
    }
    if (host) rs.host_wait[k] += sleep_until(origin_s + op.issued_end_s);
    rs.end[k] = sg4::Engine::get_clock();
    rs.done[k] = 1;
    if (host && op.issue_clock == 0) pass_barrier();
    if (rs.waiting > 0) rs.cv->notify_all();
  }
}

void Runner::arrive(int c) {
  CollectiveSync& cs = colls_[static_cast<std::size_t>(c)];
  const int members = static_cast<int>(prog_.collectives[static_cast<std::size_t>(c)].call.members.size());
  if (++cs.arrived < members) {
    std::unique_lock<sg4::Mutex> lock(*cs.mutex);
    while (!cs.done) cs.cv->wait(lock);
    return;
  }
  execute(c, cs);
  cs.done = true;
  if (members > 1) cs.cv->notify_all();
}

void Runner::execute(int c, CollectiveSync& cs) {
  const SimCollective& sc = prog_.collectives[static_cast<std::size_t>(c)];
  // All-to-alls differ call to call (their transfers), so they are planned each time, into a
  // local: this actor yields while the collective runs and others plan theirs meanwhile.
  Planned local;
  const Planned* found = nullptr;
  if (sc.call.kind == OpKind::all_to_all) {
    local = plan(sc.call, sc.measured_seconds);
    found = &local;
  } else {
    // measured_seconds is a function of the key (kind, members, bytes): no need to key on it.
    auto [it, fresh] = cache_.try_emplace({int(sc.call.kind), sc.call.members, sc.call.bytes, sc.call.rooted});
    if (fresh) it->second = plan(sc.call, sc.measured_seconds);
    found = &it->second;  // map nodes stay put and are never rewritten
  }
  const Planned& p = *found;
  const CollectiveSchedule& s = p.schedule;
  cs.algorithm = s.algorithm;
  cs.start = sg4::Engine::get_clock();
  if (sc.call.members.size() == 1) {
    cs.algorithm = "local";
    if (sc.local_seconds > 0) sg4::this_actor::sleep_for(sc.local_seconds);
  } else if (p.measured) {
    // The curve's time includes the launch latency and the schedule's latencies and fill.
    if (s.edges.empty()) {
      sg4::this_actor::sleep_for(p.wait_s);
    } else if (mode_ == SimMode::flows) {
      run_flows(s);
    } else {
      run_fast(p.summary, false);
    }
  } else if (!s.edges.empty()) {
    sg4::this_actor::sleep_for(nccl_.base_latency_us * 1e-6);
    if (mode_ == SimMode::flows) {
      run_flows(s);
    } else {
      run_fast(p.summary, true);
    }
  }
  cs.end = sg4::Engine::get_clock();
}

// Every pipeline step as its flows; a step ends when its slowest flow does.
void Runner::run_flows(const CollectiveSchedule& s) {
  std::vector<std::vector<const ScheduleEdge*>> starting(static_cast<std::size_t>(s.total_steps));
  for (const auto& e : s.edges) starting[static_cast<std::size_t>(e.first_step)].push_back(&e);
  std::vector<const ScheduleEdge*> active;
  for (int t = 0; t < s.total_steps; ++t) {
    std::erase_if(active, [t](const ScheduleEdge* e) { return e->first_step + e->steps <= t; });
    for (const auto* e : starting[static_cast<std::size_t>(t)]) active.push_back(e);
    std::vector<sg4::CommPtr> comms;
    for (const auto* e : active) {
      const auto bytes = static_cast<std::uint64_t>(std::max(1.0, std::round(e->bytes_per_step)));
      comms.push_back(sg4::Comm::sendto_async(hosts_[static_cast<std::size_t>(e->src)], hosts_[static_cast<std::size_t>(e->dst)], bytes));
    }
    sg4::Comm::wait_all(comms);
  }
}

// All bytes as one parallel task (L07 charges the slowest route's latency once), then the
// schedule's remaining latency and pipeline fill (collective_schedule.hpp, FastSummary).
Runner::Planned Runner::plan(const CollectiveCall& call, std::optional<double> measured_s) const {
  Planned p;
  p.schedule = make_schedule(call, topo_, nccl_);
  if (measured_s && call.members.size() > 1 && !p.schedule.edges.empty()) {
    MeasuredRun m = measured_run(p.schedule, topo_, *measured_s, mode_);
    p.schedule = std::move(m.schedule);
    p.summary = std::move(m.summary);
    p.measured = true;
    p.wait_s = m.wait_s;
    return p;
  }
  if (mode_ == SimMode::fast) p.summary = summarize(p.schedule, topo_);
  return p;
}

void Runner::run_fast(const FastSummary& f, bool add_schedule_extra) {
  std::vector<int> hosts_used;
  std::map<int, std::size_t> index;
  for (const auto& [src, dst, bytes] : f.pair_bytes) {
    for (int r : {src, dst}) {
      if (index.emplace(r, hosts_used.size()).second) hosts_used.push_back(r);
    }
  }
  const std::size_t n = hosts_used.size();
  if (n > kDenseTaskHosts) {
    // A parallel task takes a dense n x n byte matrix (8 MB at 1024 GPUs, copied and scanned
    // several times by SimGrid); past this size one transfer per communicating pair, all at
    // once, gives the same contention-aware bandwidth time at a fraction of the cost.
    std::vector<sg4::CommPtr> comms;
    for (const auto& [src, dst, b] : f.pair_bytes) {
      comms.push_back(sg4::Comm::sendto_async(hosts_[static_cast<std::size_t>(src)], hosts_[static_cast<std::size_t>(dst)],
                                              static_cast<std::uint64_t>(std::max(1.0, std::round(b)))));
    }
    sg4::Comm::wait_all(comms);
  } else {
    std::vector<sg4::Host*> hosts;
    for (int r : hosts_used) hosts.push_back(hosts_[static_cast<std::size_t>(r)]);
    std::vector<double> flops(n, 0), bytes(n * n, 0);
    for (const auto& [src, dst, b] : f.pair_bytes) bytes[index.at(src) * n + index.at(dst)] += b;
    sg4::this_actor::parallel_execute(hosts, flops, bytes);
  }
  // The task took max_route_latency + (its bandwidth time under whatever else runs); alone it
  // would take busiest_link_s. Add what the schedule spends beyond that: latencies and fill.
  const double extra = f.isolated_s - f.busiest_link_s - f.max_route_latency_s;
  if (add_schedule_extra && extra > 0) sg4::this_actor::sleep_for(extra);
}

void Runner::check_finished() const {
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    for (std::size_t i = 0; i < ranks_[r].done.size(); ++i) {
      if (ranks_[r].done[i]) continue;
      const SimOp& op = prog_.ranks[r][i];
      throw Error("sim: deadlock: rank " + std::to_string(r) + " op " + std::to_string(i) + " '" + op.category + " " +
                  op.label + "' never ran");
    }
  }
}

SimOutcome Runner::outcome() const {
  SimOutcome o;
  double latest = -1;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    double end = 0, busy = 0, opt = 0;
    std::map<std::string, double> by_source;
    for (std::size_t i = 0; i < ranks_[r].end.size(); ++i) {
      const SimOp& op = prog_.ranks[r][i];
      end = std::max(end, ranks_[r].end[i]);
      if (op.phase != Phase::optimizer) o.grads_ready_s = std::max(o.grads_ready_s, ranks_[r].end[i]);
      // Waiting for the host: the calibration's executor_issue_us priced it.
      if (ranks_[r].host_wait[i] > 0) by_source["measured"] += ranks_[r].host_wait[i];
      if (op.collective >= 0) {
        const CollectiveSync& cs = colls_[static_cast<std::size_t>(op.collective)];
        by_source[op.source] += cs.end - cs.start;
        continue;
      }
      by_source[op.source] += op.seconds;
      busy += op.seconds;
      if (op.phase == Phase::optimizer) opt += op.seconds;
    }
    o.optimizer_compute_s.push_back(opt);
    if (end > latest) latest = end, o.critical_compute_busy_s = busy, o.critical_seconds_by_source = std::move(by_source);
    o.step_s = std::max(o.step_s, end);
  }
  for (std::size_t c = 0; c < colls_.size(); ++c) {
    const SimCollective& sc = prog_.collectives[c];
    CollectiveRecord rec;
    rec.kind = std::string(to_string(sc.call.kind));
    rec.algorithm = colls_[c].algorithm;
    rec.group = sc.group;
    rec.label = sc.label;
    rec.phase = std::string(to_string(sc.phase));
    rec.ranks = static_cast<int>(sc.call.members.size());
    rec.merged = sc.merged;
    rec.bytes = sc.call.bytes;
    rec.start_s = colls_[c].start;
    rec.end_s = colls_[c].end;
    o.collectives.push_back(rec);
  }
  return o;
}

json to_json(const SimOutcome& o) {
  json j = {{"step_s", o.step_s}, {"grads_ready_s", o.grads_ready_s}, {"busy", o.critical_compute_busy_s},
            {"opt", o.optimizer_compute_s}, {"wall_s", o.wall_s}, {"by_source", o.critical_seconds_by_source}};
  json cs = json::array();
  for (const auto& c : o.collectives) {
    cs.push_back({c.kind, c.algorithm, c.group, c.label, c.phase, c.ranks, c.merged, c.bytes, c.start_s, c.end_s});
  }
  j["collectives"] = std::move(cs);
  return j;
}

SimOutcome from_json(const json& j) {
  SimOutcome o;
  o.step_s = j.at("step_s");
  o.grads_ready_s = j.at("grads_ready_s");
  o.critical_compute_busy_s = j.at("busy");
  o.optimizer_compute_s = j.at("opt").get<std::vector<double>>();
  o.wall_s = j.at("wall_s");
  o.critical_seconds_by_source = j.at("by_source").get<std::map<std::string, double>>();
  for (const auto& c : j.at("collectives")) {
    CollectiveRecord r{c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]};
    o.collectives.push_back(r);
  }
  return o;
}

SimOutcome simulate_here(const StepProgram& program, const ClusterSpec& cluster, const SimOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const Topology topo(cluster);
  if (static_cast<int>(program.ranks.size()) != topo.world()) {
    throw Error("sim: the plan has " + std::to_string(program.ranks.size()) + " ranks but the cluster has " +
                std::to_string(topo.world()) + " GPUs (cluster.nodes x cluster.gpus_per_node)");
  }
  int argc = 1;
  char name[] = "dmuon-sim";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  if (options.mode == SimMode::fast) {
    configure_fast_model();
  } else {
    configure_network_model();
  }
  const auto hosts = build_platform(topo);
  Runner runner(program, topo, cluster.nccl, options.mode);
  runner.start(hosts);
  engine.run();
  runner.check_finished();
  SimOutcome o = runner.outcome();
  if (!options.trace_file.empty()) {
    std::vector<std::vector<double>> start, end;
    for (const auto& rs : runner.ranks()) start.push_back(rs.start), end.push_back(rs.end);
    write_chrome_trace(options.trace_file, program, start, end, topo.gpus_per_node(), options.trace_nodes);
  }
  o.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

}  // namespace

double CollectiveRecord::busbw_GBps() const {
  OpKind k = OpKind::all_reduce;
  for (OpKind c : {OpKind::broadcast, OpKind::reduce, OpKind::all_reduce, OpKind::all_gather, OpKind::reduce_scatter,
                   OpKind::all_to_all}) {
    if (to_string(c) == kind) k = c;
  }
  return algbw_GBps() * bus_factor(k, ranks);
}

SimOutcome simulate(const StepProgram& program, const ClusterSpec& cluster, const SimOptions& options) {
  return outcome_from_json(run_isolated([&] { return outcome_to_json(simulate_here(program, cluster, options)); }));
}

SimOutcome simulate_in_process(const StepProgram& program, const ClusterSpec& cluster, const SimOptions& options) {
  return simulate_here(program, cluster, options);
}

std::string outcome_to_json(const SimOutcome& o) { return to_json(o).dump(); }
SimOutcome outcome_from_json(const std::string& text) { return from_json(json::parse(text)); }

}  // namespace dmuon::sim
