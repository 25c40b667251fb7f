// SimGrid 3.32's ptask_L07 host model keeps its max-min system's selective-update bookkeeping
// (marking every constraint a change can reach) although its solver, FairBottleneck, recomputes
// every variable from every constraint and never reads it; and the marking walk is quadratic in
// a parallel task's constraints (~3,000 for a collective across 1,024 nodes). This module
// replaces the walk with one that skips it while the fast model runs. Why that cannot change a
// prediction, and how the replacement takes the library's calls: l07_selective_update.cpp.
#pragma once

namespace dmuon::sim {

// Whether this executable's definition takes libsimgrid's calls to the walk (it exports it and
// the library's own definition is found behind it): false in a program linked without
// dmuon_sim's link options, where the library walks as always.
bool marking_walk_interposed();

// Skip the walk (on) or run the library's (off) from now on in this process. Returns whether it
// is skipped: never where the walk is not interposed.
bool skip_marking_walk(bool on);

}  // namespace dmuon::sim
