// How the runner executes a collective: the last member to arrive runs its schedule (planned
// once per call shape, collective_schedule.hpp) as flows or as one parallel task.
#include <algorithm>
#include <cmath>

#include "sim/measured_collectives.hpp"
#include "sim/proxy_task.hpp"
#include "sim/runner.hpp"

namespace dmuon::sim {
namespace {

// Up to this many hosts a collective is one parallel task (a dense n x n byte matrix: 32 MB at
// 2,048), past it one task per pair. 128 until 2026-11-27, then 1,024: measured then
// (reports/sim-speed.md, "Replica fold"), the per-pair comms cost far more than the matrix (SimGrid
// 3.32 ends every detached host-to-host comm with a removal from a list of all in flight): adamw at
// 2,048 GPUs (replicate groups of 256) 70 s -> 9.4 s with identical predictions, ddp-redundant at
// 1,024 (world all-reduces of 1,024) 10.9 -> 9.8 s with its step 6e-6 relative apart. 2,048 since
// the replica lockstep ("Replica lockstep"): adamw at 16,384 GPUs (replicate groups of 2,048) one
// task each in 4 min 48 s (beside another run), where one two-host task per pair had not
// finished after 10 min 31 s of CPU. Since the proxy tasks (proxy_task.hpp) a collective across
// nodes is one task at every size and holds no n x n matrix; the bound only decides, when every
// proxy is taken, between the dense matrix (the same model) and a task per pair (each pair its
// own rate: the same dates as one task for ddp-redundant's world all-reduces at 4,096 and 8,192
// GPUs, reports/sim-speed.md, but not the same model).
constexpr std::size_t kDenseTaskHosts = 2048;

}  // namespace

int Runner::one_node_offset(const std::vector<int>& members) const {
  const int node = topo_.node_of(members.front());
  for (int m : members) {
    if (topo_.node_of(m) != node) return 0;
  }
  return node * topo_.gpus_per_node();
}

void Runner::arrive(int c) {
  CollectiveSync& cs = colls_[static_cast<std::size_t>(c)];
  if (++cs.arrived < arrivals_[static_cast<std::size_t>(c)]) {
    cs.parked.push_back(sg4::Actor::self());
    while (!cs.done) sg4::this_actor::suspend();
    return;
  }
  execute(c, cs);
  cs.done = true;
  for (sg4::Actor* a : cs.parked) a->resume();  // in arrival order, as notify_all woke them
}

void Runner::execute(int c, CollectiveSync& cs) {
  const SimCollective& sc = prog_.collectives[static_cast<std::size_t>(c)];
  // All-to-alls differ call to call (their transfers), so they are planned each time, into a
  // local: this actor yields while the collective runs and others plan theirs meanwhile.
  Planned local;
  const Planned* found = nullptr;
  int offset = 0;  // the ranks the plan found names are these less `offset`
  if (sc.call.kind == OpKind::all_to_all) {
    local = plan(sc.call, sc.measured_seconds);
    found = &local;
  } else {
    // measured_seconds is a function of the key (kind, members, bytes): no need to key on it.
    // A collective inside one node is planned as its copy on node 0 and run moved back
    // (`offset`): the nodes are alike (Topology), so the copy's schedule is this one's, every
    // rank moved by the node's first rank. The owner strategies' per-node shard-group
    // collectives were planned once per node.
    offset = one_node_offset(sc.call.members);
    CollectiveCall moved;  // the node-0 copy, when offset > 0
    if (offset > 0) {
      moved = {sc.call.kind, sc.call.members, sc.call.bytes, sc.call.rooted, {}};
      for (int& m : moved.members) m -= offset;
      for (auto& [root, bytes] : moved.rooted) root -= offset;
    }
    const CollectiveCall& call = offset > 0 ? moved : sc.call;
    auto [it, fresh] = cache_.try_emplace({int(call.kind), call.members, call.bytes, call.rooted});
    if (fresh) it->second = plan(call, sc.measured_seconds);
    found = &it->second;  // map nodes stay put and are never rewritten
  }
  const Planned& p = *found;
  const CollectiveSchedule& s = p.schedule;
  cs.algorithm = s.algorithm;
  cs.start = sg4::Engine::get_clock();
  // NCCL beside compute: each member's compute-busy seconds so far, to know how much of the
  // transfer ran beside compute (in lockstep a member's state is its template peer's: slot).
  const double stretch = sc.call.members.size() > 1 ? collective_slowdown() : 0;
  std::vector<double> busy_before;
  if (stretch > 0) {
    for (int m : sc.call.members) busy_before.push_back(compute_busy_until_now(m));
  }
  if (sc.call.members.size() == 1) {
    cs.algorithm = "local";
    if (sc.local_seconds > 0) timed_sleep_for(sc.local_seconds);
  } else if (p.measured) {
    // The curve's time includes the launch latency and the schedule's latencies and fill.
    if (s.edges.empty()) {
      timed_sleep_for(p.wait_s);
    } else if (mode_ == SimMode::flows) {
      run_flows(s, offset);
    } else {
      run_fast(p.summary, false, offset);
    }
  } else if (!s.edges.empty()) {
    timed_sleep_for(nccl_.base_latency_us * 1e-6);
    if (mode_ == SimMode::flows) {
      run_flows(s, offset);
    } else {
      run_fast(p.summary, true, offset);
    }
  }
  // NCCL beside compute: every second of the transfer during which a member computed costs
  // `stretch` more (the probe's all-gathers beside GEMMs; the busiest member counts, the others
  // wait for it). The extra time is spent in flight, so compute beside it stays slowed.
  if (stretch > 0) {
    double overlap = 0;
    for (std::size_t i = 0; i < busy_before.size(); ++i) {
      overlap = std::max(overlap, compute_busy_until_now(sc.call.members[i]) - busy_before[i]);
    }
    if (overlap > 0) timed_sleep_for(stretch * overlap);
  }
  // The members' copies into and out of a packed call's staging buffer, on the same stream.
  if (sc.pack_seconds > 0) timed_sleep_for(sc.pack_seconds);
  cs.end = sg4::Engine::get_clock();
}

// Every pipeline step as its flows; a step ends when its slowest flow does.
void Runner::run_flows(const CollectiveSchedule& s, int offset) {
  std::vector<std::vector<const ScheduleEdge*>> starting(static_cast<std::size_t>(s.total_steps));
  for (const auto& e : s.edges) starting[static_cast<std::size_t>(e.first_step)].push_back(&e);
  std::vector<const ScheduleEdge*> active;
  for (int t = 0; t < s.total_steps; ++t) {
    std::erase_if(active, [t](const ScheduleEdge* e) { return e->first_step + e->steps <= t; });
    for (const auto* e : starting[static_cast<std::size_t>(t)]) active.push_back(e);
    std::vector<sg4::CommPtr> comms;
    for (const auto* e : active) {
      const auto bytes = static_cast<std::uint64_t>(std::max(1.0, std::round(e->bytes_per_step)));
      comms.push_back(sg4::Comm::sendto_async(hosts_[static_cast<std::size_t>(e->src + offset)],
                                              hosts_[static_cast<std::size_t>(e->dst + offset)], bytes));
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

bool Runner::run_proxy_task(const std::vector<std::tuple<int, int, double>>& pairs, const std::vector<int>& hosts_used) {
  if (proxies_.empty() || topo_.node_of(*std::min_element(hosts_used.begin(), hosts_used.end())) ==
                              topo_.node_of(*std::max_element(hosts_used.begin(), hosts_used.end()))) {
    return false;
  }
  const std::vector<ProxyPair> task = proxy_pairs(pairs, hosts_used, topo_);
  const auto q = static_cast<std::size_t>(proxies_for(task.size()));
  if (free_proxies_.size() < q) return false;
  std::vector<int> mine(free_proxies_.end() - static_cast<std::ptrdiff_t>(q), free_proxies_.end());
  free_proxies_.resize(free_proxies_.size() - q);
  std::vector<sg4::Host*> hosts;
  for (int p : mine) hosts.push_back(proxies_[static_cast<std::size_t>(p)]);
  // Pair k of the task from proxy a to proxy b (a != b), row by row.
  std::vector<double> bytes(q * q, 0.0);
  std::vector<std::pair<int, int>> routed;
  std::size_t k = 0;
  for (std::size_t a = 0; a < q && k < task.size(); ++a) {
    for (std::size_t b = 0; b < q && k < task.size(); ++b) {
      if (a == b) continue;
      proxy_routes_->set(mine[a], mine[b], task[k].links, task[k].latency_s);
      routed.emplace_back(mine[a], mine[b]);
      bytes[a * q + b] = task[k].bytes;
      ++k;
    }
  }
  sg4::this_actor::parallel_execute(hosts, std::vector<double>(q, 0.0), bytes);
  for (const auto& [a, b] : routed) proxy_routes_->clear(a, b);
  free_proxies_.insert(free_proxies_.end(), mine.begin(), mine.end());
  return true;
}

// Each helper actor starts and waits for at most this many pair tasks: SimGrid 3.32 removes an
// ended task from its issuing actor's list of activities by scanning the whole list
// (ExecImpl::post), so one actor issuing a world all-reduce's ~16,000 pairs spent its time there.
constexpr std::size_t kPairsPerActor = 64;

void Runner::run_pairs(const std::vector<std::tuple<int, int, double>>& pairs, int offset) {
  sg4::Actor* self = sg4::Actor::self();
  std::size_t pending = 0;  // helpers still waiting; this actor's frame outlives them all
  for (std::size_t begin = 0; begin < pairs.size(); begin += kPairsPerActor) {
    const std::size_t end = std::min(pairs.size(), begin + kPairsPerActor);
    ++pending;
    sg4::Actor::create("pairs", hosts_[static_cast<std::size_t>(std::get<0>(pairs[begin]) + offset)],
                       [this, &pairs, &pending, self, begin, end, offset] {
      const std::vector<double> flops(2, 0.0);
      std::vector<sg4::ExecPtr> tasks;
      for (std::size_t i = begin; i < end; ++i) {
        const auto& [src, dst, b] = pairs[i];
        const std::vector<sg4::Host*> pair{hosts_[static_cast<std::size_t>(src + offset)], hosts_[static_cast<std::size_t>(dst + offset)]};
        tasks.push_back(sg4::this_actor::exec_init(pair, flops, {0.0, std::max(1.0, std::round(b)), 0.0, 0.0}));
        tasks.back()->start();
      }
      for (const auto& t : tasks) t->wait();
      if (--pending == 0) self->resume();
    });
  }
  while (pending > 0) sg4::this_actor::suspend();
}

void Runner::run_fast(const FastSummary& f, bool add_schedule_extra, int offset) {
  std::vector<int> hosts_used;
  std::map<int, std::size_t> index;
  for (const auto& [src, dst, bytes] : f.pair_bytes) {
    for (int r : {src + offset, dst + offset}) {
      if (index.emplace(r, hosts_used.size()).second) hosts_used.push_back(r);
    }
  }
  const std::size_t n = hosts_used.size();
  // Inside one node (offset > 0, or all members on node 0) the matrix is small; across nodes the
  // proxy form replaces it, unless every proxy is taken.
  const bool proxied = offset == 0 && run_proxy_task(f.pair_bytes, hosts_used);
  if (!proxied && n > kDenseTaskHosts) {
    // One two-host task per communicating pair, all at once, without the matrix (512 MB at
    // 8,192 hosts): a two-host task is what a host-to-host comm is in the ptask model
    // (NetworkL07Model::communicate), without SimGrid 3.32's removal of each ended comm from a
    // list of all in flight.
    run_pairs(f.pair_bytes, offset);
  } else if (!proxied) {
    std::vector<sg4::Host*> hosts;
    for (int r : hosts_used) hosts.push_back(hosts_[static_cast<std::size_t>(r)]);
    std::vector<double> flops(n, 0), bytes(n * n, 0);
    for (const auto& [src, dst, b] : f.pair_bytes) bytes[index.at(src + offset) * n + index.at(dst + offset)] += b;
    sg4::this_actor::parallel_execute(hosts, flops, bytes);
  }
  // The task took max_route_latency + (its bandwidth time under whatever else runs); alone it
  // would take busiest_link_s. Add what the schedule spends beyond that: latencies and fill.
  const double extra = f.isolated_s - f.busiest_link_s - f.max_route_latency_s;
  if (add_schedule_extra && extra > 0) timed_sleep_for(extra);
}

}  // namespace dmuon::sim
