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

// The same, started now and collected later, so that several simulations run side by side.
class IsolatedRun {
 public:
  explicit IsolatedRun(const std::function<std::string()>& work);
  IsolatedRun(IsolatedRun&& other) noexcept : pid_(other.pid_), fd_(other.fd_) { other.pid_ = -1, other.fd_ = -1; }
  IsolatedRun(const IsolatedRun&) = delete;
  IsolatedRun& operator=(const IsolatedRun&) = delete;
  ~IsolatedRun();
  // What the work returned; throws as run_isolated does. Call once.
  std::string wait();

 private:
  int pid_ = -1, fd_ = -1;
};

}  // namespace dmuon::sim
