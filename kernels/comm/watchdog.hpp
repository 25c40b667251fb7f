// A deadline on a blocking NCCL set-up call (communicator init, split). Those calls cannot be
// interrupted: a rank that died or stalled before reaching them leaves its peers inside NCCL's
// bootstrap for ever, and no dmuon::Error can be thrown from there. When the deadline passes
// the watchdog prints "dmuon: <what> did not finish within T s (...)" and ends the process with
// exit status 1 — every local rank with it (in threads mode they are one process), and under
// mpirun the launcher then stops the other processes.
#pragma once
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace dmuon::comm {

class SetupWatchdog {
 public:
  // seconds <= 0 disables the deadline.
  SetupWatchdog(double seconds, std::string what);
  ~SetupWatchdog();  // the guarded call returned (or threw): disarms and joins
  SetupWatchdog(const SetupWatchdog&) = delete;
  SetupWatchdog& operator=(const SetupWatchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace dmuon::comm
