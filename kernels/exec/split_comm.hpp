// A communicator of `size` consecutive ranks split from the world (the world's own communicator
// when size == world), for the measurement tools that time a group size of their own.
#pragma once
#include <exception>
#include <string>

#include <nccl.h>

#include "core/error.hpp"
#include "kernels/comm/check.hpp"
#include "kernels/comm/watchdog.hpp"
#include "kernels/comm/world.hpp"

namespace dmuon::exec {

// A communicator split from the world for one group size. Destroyed normally; aborted when
// the tool unwinds from an error (a destroy would wait for peers that may be gone). `purpose`
// ends the error message ("the collective sweep").
class SplitComm {
 public:
  SplitComm(comm::RankComms& comms, int size, double timeout_seconds, const std::string& purpose) {
    if (size == comms.world()) {
      comm_ = comms.world_comm();
      return;
    }
    const std::string what = "rank " + std::to_string(comms.rank()) + ": splitting the world into groups of " +
                             std::to_string(size) + " for " + purpose;
    try {
      const comm::SetupWatchdog watchdog(timeout_seconds, what);
      DMUON_NCCL_CHECK(ncclCommSplit(comms.world_comm(), comms.rank() / size, comms.rank() % size, &comm_, nullptr));
    } catch (const Error& e) {
      throw Error(what + ": " + e.what());
    }
    owned_ = true;
  }
  ~SplitComm() {
    if (!owned_ || !comm_) return;
    if (std::uncaught_exceptions() > 0) (void)ncclCommAbort(comm_);
    else (void)ncclCommDestroy(comm_);
  }
  SplitComm(const SplitComm&) = delete;
  SplitComm& operator=(const SplitComm&) = delete;
  ncclComm_t get() const { return comm_; }

 private:
  ncclComm_t comm_ = nullptr;
  bool owned_ = false;
};

}  // namespace dmuon::exec
