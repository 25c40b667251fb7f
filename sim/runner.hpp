// The SimGrid side of simulator.hpp: one actor per GPU stream runs its ops in order, each op
// starting once its dependencies are done; the last member of a collective to arrive executes
// it (runner_collectives.cpp). Internal to sim/ (simulator.cpp drives it).
#pragma once
#include <simgrid/s4u.hpp>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sim/collective_schedule.hpp"
#include "sim/platform.hpp"
#include "sim/simulator.hpp"
#include "sim/topology.hpp"

namespace dmuon::sim {

namespace sg4 = simgrid::s4u;

// This actor waits until `t_s` (or `seconds` from now) on a kernel timer: a timer and a
// suspend/resume pair, where sg4::this_actor::sleep_for creates a CPU action that the max-min
// solver carries until it ends. Compute ops are pure waits (they share no resource), so the
// cheaper mechanism gives the same dates.
void timed_sleep_until(double t_s);
void timed_sleep_for(double seconds);

// Per GPU. SimGrid actors run one at a time and only yield inside SimGrid calls, so counters
// are read and written without locking, and an actor that must wait suspends itself until the
// actor that meets its condition resumes it: one SimGrid call each side, where a mutex and a
// condition variable took three (lock, wait, unlock) and woke every waiter of the variable.
struct RankSync {
  std::vector<sg4::Actor*> parked;  // per stream: its actor while suspended, else nullptr
  std::vector<int> completed;       // per stream: ops done (in stream order)
  // Per stream actor that waits: the stream and count it waits for (-1: not waiting).
  std::vector<int> wait_stream, wait_count;
  std::vector<char> done;
  std::vector<double> start, end;
  std::vector<double> host_wait;  // per op: seconds it waited for the host to enqueue it
  // Compute beside NCCL (StepProgram::compute_slowdown_beside_nccl): collectives of several GPUs
  // in flight on this rank; the compute actor waits on `nccl_changed` (with `nccl_mutex`) for
  // the rest of its op at the current rate, woken when the count goes from or to zero.
  int nccl_in_flight = 0;
  std::vector<double> slowed;  // per op: seconds its compute took beyond op.seconds (sized when contended)
  sg4::MutexPtr nccl_mutex;
  sg4::ConditionVariablePtr nccl_changed;
  // NCCL beside compute (StepProgram::collective_slowdown_beside_compute): compute ops running on
  // this rank now, and the seconds at least one ran before `computing_since`.
  int computing = 0;
  double compute_busy_s = 0, computing_since = 0;
};

struct CollectiveSync {
  int arrived = 0;
  bool done = false;
  std::vector<sg4::Actor*> parked;  // members that arrived before the last one
  double start = 0, end = 0;
  std::string algorithm;
};

class Runner {
 public:
  // `lockstep`: the folded program's replicas run in lockstep (replica_lockstep.hpp): only the
  // template replicas' GPUs run actors and hold state, every other GPU reads its template peer's.
  Runner(const StepProgram& prog, const Topology& topo, const NcclSpec& nccl, const SimOptions& options, bool lockstep)
      : prog_(prog), topo_(topo), nccl_(nccl), mode_(options.mode), reference_(options.reference_runner),
        lockstep_(lockstep) {}

  // The GPUs that run actors: the template replicas' in lockstep, else every one.
  std::size_t simulated_gpus() const { return lockstep_ ? prog_.ranks.size() : prog_.world(); }
  // The actors start() creates: one per stream with ops of each simulated GPU.
  std::size_t stream_actors() const;
  // Proxy hosts the platform holds for collectives' tasks (proxy_task.hpp). A probe counted at
  // most 24 in use at once (16node.yaml, every strategy at 1,024 GPUs; dedicated, owner-striped
  // and adamw at 8,192); a task that finds too few free runs over its GPUs, as before.
  static constexpr int kProxyHosts = 256;
  void start(const Platform& platform);
  SimOutcome outcome() const;
  void check_finished() const;
  // GPU `rank`'s op dates (its template peer's in lockstep).
  const RankSync& rank_state(std::size_t rank) const { return ranks_[slot(rank)]; }

 private:
  // An op's dependencies as "stream s has completed n ops": a stream runs its ops in order, so
  // the latest dependency on each stream implies the others, and one on the op's own stream is
  // already met. The same condition as every dependency done, checked in at most kStreams steps.
  struct Need {
    int stream, count;
  };
  // Where GPU `rank`'s state lives in ranks_: in lockstep its list's (its template peer's).
  std::size_t slot(std::size_t rank) const { return lockstep_ ? prog_.list(rank) : rank; }
  // The world rank of each slot: the GPUs that run actors, in rank order.
  std::vector<std::size_t> simulated_ranks() const;
  void reduce_dependencies();
  void stream_actor(int rank, int stream, const std::vector<int>& ops);
  void wait_needs(int rank, int stream, int op);
  void wait_all_deps(int rank, int stream, const std::vector<int>& deps);  // reference_runner
  void op_done(int rank, int stream, std::size_t op);
  // Compute beside NCCL: a collective of several GPUs enters or leaves flight on `rank`; a
  // compute op of `seconds` alone runs at 1 / (1 + slowdown) while any is in flight; returns the
  // seconds it took.
  void nccl_enters(int rank);
  void nccl_leaves(int rank);
  double run_contended(int rank, double seconds);
  // Compute beside NCCL is on: a slowdown above 0 (0 or none: compute ignores collectives).
  bool contended() const { return prog_.compute_slowdown_beside_nccl.value_or(0) > 0; }
  // NCCL beside compute: a collective of several GPUs takes this many extra seconds per second of
  // its transfer during which a member computed (0: collectives ignore compute).
  double collective_slowdown() const { return prog_.collective_slowdown_beside_compute.value_or(0); }
  void compute_starts(int rank);
  void compute_ends(int rank);
  double compute_busy_until_now(int rank) const;
  // Host issue model (StepProgram::issue_s_per_launch): the origin of an op's issue clock (1:
  // once every clock-0 op of every rank is done, as the benchmark's barrier between its runs).
  double clock_origin(int issue_clock);
  void pass_barrier();
  void arrive(int c);
  void execute(int c, CollectiveSync& cs);
  // `offset` is added to every rank the schedule or summary names (one_node_offset).
  void run_flows(const CollectiveSchedule& s, int offset);
  void run_fast(const FastSummary& f, bool add_schedule_extra, int offset);
  // One two-host parallel task per (src, dst, bytes), all at once, issued by helper actors.
  void run_pairs(const std::vector<std::tuple<int, int, double>>& pairs, int offset);
  // The task of `pairs` (ranks already moved by the offset) over proxy hosts; false, having
  // done nothing, when too few are free.
  bool run_proxy_task(const std::vector<std::tuple<int, int, double>>& pairs, const std::vector<int>& hosts_used);
  // The first rank of the node holding every member, 0 when they span nodes.
  int one_node_offset(const std::vector<int>& members) const;
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
  bool reference_;  // SimOptions::reference_runner
  bool lockstep_;
  // Per collective: arrivals that start it (its members; in lockstep, those in template
  // replicas), and the collective whose execution it is (in lockstep a copy is its original's).
  std::vector<int> arrivals_;
  std::vector<int> executed_as_;
  std::vector<sg4::Host*> hosts_;
  std::vector<sg4::Host*> proxies_;
  ProxyRoutes* proxy_routes_ = nullptr;
  std::vector<int> free_proxies_;
  std::vector<RankSync> ranks_;
  // Needs of every op: op i of rank r uses needs_[need_begin_[r][i] .. need_begin_[r][i + 1]).
  std::vector<Need> needs_;
  std::vector<std::vector<std::size_t>> need_begin_;
  std::vector<CollectiveSync> colls_;
  struct Barrier {
    long pending = 0;  // clock-0 ops still to finish, when clock-1 ops exist
    double at_s = 0;
    int waiting = 0;
    sg4::MutexPtr mutex;
    sg4::ConditionVariablePtr cv;
  } barrier_;
};

}  // namespace dmuon::sim
