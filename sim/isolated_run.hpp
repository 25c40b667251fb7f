// SimGrid 3.32 allows one Engine per process (its configuration locks after the first
// platform), while dmuon-sim runs one simulation per strategy and sweep point. Each simulation
// therefore runs in a forked child that sends its result back as text.
#pragma once
#include <functional>
#include <string>

namespace dmuon::sim {

// Runs `work` in a child process and returns what it returned. A dmuon::Error (or other
// exception) thrown in the child is rethrown here as dmuon::Error with the same message; a
// child that dies (signal, exit) is reported as an error too.
std::string run_isolated(const std::function<std::string()>& work);

}  // namespace dmuon::sim
