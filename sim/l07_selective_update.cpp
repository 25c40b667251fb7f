#include "sim/l07_selective_update.hpp"

#include <atomic>

#include <dlfcn.h>
#include <xbt/base.h>  // what simgrid/version.h needs before it
#include <simgrid/version.h>

// What is replaced (SimGrid 3.32, src/kernel/lmm/maxmin.cpp): System::update_modified_cnst_set(c)
// puts c in `modified_constraint_set` and calls update_modified_cnst_set_rec(c), which walks every
// constraint reachable from c through enabled variables. A variable is marked visited only after
// its whole constraint list is walked, so the walk re-enters a parallel task's list at every level
// of its recursion: ~k^2/2 steps for a task of k constraints, each time a change touches anything
// that shares a resource with it. perf, dedicated at 8,192 GPUs of 16node.yaml: 26% of the run.
//
// Why skipping it changes nothing under ptask_L07: that model builds a FairBottleneck system with
// selective update on, and FairBottleneck::do_solve sets every variable of `variable_set` from
// every constraint of `active_constraint_set`. `modified_constraint_set` is read only by
// System::solve, to list modified actions for the LAZY update algorithm; the L07 CPU and network
// models update with FULL, which reads every started action. Under CM02 (the flows mode) MaxMin
// solves only the marked constraints, so there the library walks (network_model.cpp turns the
// skip off). The identity checks (reports/sim-speed.md) compare every prediction both ways.
//
// How: the walk is a member function libsimgrid exports, and its callers reach it through the
// PLT (update_modified_cnst_set ends with a jump to it), so a definition of the same symbol in
// the executable, exported (sim/CMakeLists.txt), takes those calls; the library's definition stays
// reachable behind it through dlsym(RTLD_NEXT). It reads no SimGrid structure, so it depends only
// on the symbol's name: a SimGrid without it leaves marking_walk_interposed() false. The argument
// above was made on 3.32's sources, so another SimGrid walks until someone makes it again for that
// version (marking_walk_interposed() false; test_sim_fast_model_shortcuts then fails, saying so).
namespace {

constexpr const char* kWalkSymbol = DMUON_MARKING_WALK_SYMBOL;  // sim/CMakeLists.txt names it

std::atomic<bool> g_skip{false};

using MarkingWalk = void (*)(void* system, const void* constraint);

MarkingWalk library_walk() {
  static const auto walk = reinterpret_cast<MarkingWalk>(dlsym(RTLD_NEXT, kWalkSymbol));
  return walk;
}

}  // namespace

extern "C" void dmuon_marking_walk(void* system, const void* constraint) __asm__(DMUON_MARKING_WALK_SYMBOL);

extern "C" void dmuon_marking_walk(void* system, const void* constraint) {
  if (g_skip.load(std::memory_order_relaxed)) return;
  library_walk()(system, constraint);
}

namespace dmuon::sim {

bool marking_walk_interposed() {
  static const bool interposed = [] {
    int major = 0, minor = 0, patch = 0;
    sg_version_get(&major, &minor, &patch);  // the library's, not the headers'
    return major == 3 && minor == 32 && library_walk() != nullptr &&
           dlsym(RTLD_DEFAULT, kWalkSymbol) == reinterpret_cast<void*>(&dmuon_marking_walk);
  }();
  return interposed;
}

bool skip_marking_walk(bool on) {
  g_skip.store(on && marking_walk_interposed(), std::memory_order_relaxed);
  return g_skip.load(std::memory_order_relaxed);
}

}  // namespace dmuon::sim
