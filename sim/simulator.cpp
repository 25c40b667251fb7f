#include "sim/simulator.hpp"

#include <simgrid/s4u.hpp>

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "sim/isolated_run.hpp"
#include "sim/network_model.hpp"
#include "sim/platform.hpp"
#include "sim/replica_lockstep.hpp"
#include "sim/runner.hpp"
#include "sim/trace_writer.hpp"

namespace dmuon::sim {
namespace {

using nlohmann::json;

json to_json(const SimOutcome& o) {
  json j = {{"step_s", o.step_s}, {"grads_ready_s", o.grads_ready_s}, {"busy", o.critical_compute_busy_s},
            {"opt", o.optimizer_compute_s}, {"wall_s", o.wall_s}, {"by_source", o.critical_seconds_by_source},
            {"simulated_gpus", o.simulated_gpus}};
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
  o.simulated_gpus = j.at("simulated_gpus");
  o.critical_seconds_by_source = j.at("by_source").get<std::map<std::string, double>>();
  for (const auto& c : j.at("collectives")) {
    CollectiveRecord r{c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]};
    o.collectives.push_back(r);
  }
  return o;
}

// SimGrid copies each parallel task's n x n byte matrix (8 MB at 1,024 hosts) and frees it when the
// task ends; glibc returned such blocks to the system and faulted fresh pages in for the next
// (15% of an 8,192-GPU adamw simulation in page faults). Kept in the heap instead: 54 -> 45 s,
// peak RSS about the same (reports/sim-speed.md, "Replica lockstep").
void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

// SimGrid protects each actor's stack (8 MiB) with a guard page, which splits the mapping the
// stack sits in: two memory mappings an actor. Past vm.max_map_count (65,530 by default) the next
// actor's mprotect fails and SimGrid aborts (owner-striped at 8,192 GPUs: ~33,000 actors). So
// while the actors' mappings would not fit with room to spare, they run without guards, their
// stacks mmap'ed one mapping each (a lower M_MMAP_THRESHOLD while start() creates them): from the
// heap, SimGrid's calloc'ed stacks cost ~150 KiB of resident memory each (owner-striped at 4,096
// GPUs 9.1 -> 11.7 GB), mmap'ed ones only the pages used. dmuon's actors use a few KiB of their
// stack, so an overflow is not what the guard would catch here. Returns whether guards are off;
// throws when even one mapping an actor would not fit.
bool fit_actor_stacks(std::size_t actors) {
  long limit = 65530;
  std::ifstream in("/proc/sys/vm/max_map_count");
  in >> limit;
  constexpr long kOtherMappings = 8192;  // libraries, heap pieces, arenas, run_pairs' helpers
  const long n = static_cast<long>(actors);
  if (2 * n + kOtherMappings <= limit) return false;
  if (n + kOtherMappings > limit) {
    throw Error("sim: the simulation runs " + std::to_string(n) + " actors (one per GPU stream), one memory mapping each, over " +
                "vm.max_map_count " + std::to_string(limit) + " less " + std::to_string(kOtherMappings) +
                " for the rest of the process: raise it (sysctl -w vm.max_map_count=" + std::to_string(2 * (n + kOtherMappings)) +
                ") or simulate fewer nodes");
  }
  sg4::Engine::set_config("contexts/guard-size:0");
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  return true;
}

SimOutcome simulate_here(const StepProgram& program, const ClusterSpec& cluster, const SimOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  keep_freed_memory();
  const Topology topo(cluster);
  if (static_cast<int>(program.world()) != topo.world()) {
    throw Error("sim: the plan has " + std::to_string(program.world()) + " ranks but the cluster has " +
                std::to_string(topo.world()) + " GPUs (cluster.nodes x cluster.gpus_per_node)");
  }
  int argc = 1;
  char name[] = "dmuon-sim";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  if (options.mode == SimMode::fast) {
    configure_fast_model(options.keep_marking_walk);
  } else {
    configure_network_model();
  }
  const Platform platform = build_platform(topo, options.mode == SimMode::fast && options.proxy_tasks ? Runner::kProxyHosts : 0);
  const bool lockstep = options.lockstep_replicas && replica_lockstep_obstacle(program, topo).empty();
  Runner runner(program, topo, cluster.nccl, options, lockstep);
  const bool unguarded = fit_actor_stacks(runner.stream_actors());
  runner.start(platform);
  if (unguarded) keep_freed_memory();  // back to the heap for the parallel tasks' matrices
  engine.run();
  runner.check_finished();
  SimOutcome o = runner.outcome();
  o.simulated_gpus = static_cast<int>(runner.simulated_gpus());
  if (!options.trace_file.empty()) {
    // The traced GPUs' dates only (a lockstep runner holds the templates', shared by the others).
    const std::size_t traced = options.trace_nodes > 0 ? std::min(program.world(), std::size_t(options.trace_nodes) *
                                                                                    std::size_t(topo.gpus_per_node()))
                                                       : program.world();
    std::vector<std::vector<double>> start, end;
    for (std::size_t r = 0; r < traced; ++r) start.push_back(runner.rank_state(r).start), end.push_back(runner.rank_state(r).end);
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
