#include "kernels/comm/watchdog.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace dmuon::comm {

SetupWatchdog::SetupWatchdog(double seconds, std::string what) {
  if (!(seconds > 0)) return;
  thread_ = std::thread([this, seconds, what = std::move(what)] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (done_cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) return;
    // No exception can reach the thread blocked in NCCL; end the process with the cause.
    std::fprintf(stderr,
                 "dmuon: %s did not finish within %g s (a rank died or stalled before joining); exiting\n",
                 what.c_str(), seconds);
    std::fflush(stderr);
    std::_Exit(1);
  });
}

SetupWatchdog::~SetupWatchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_one();
  thread_.join();
}

}  // namespace dmuon::comm
