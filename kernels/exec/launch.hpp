// Starting the ranks of an executor job, for code outside kernels/ (no CUDA or NCCL header):
// one thread a local GPU (single-process mode), one process a GPU under `mpirun -np N`, or
// processes that found each other through DMUON_RANK/DMUON_WORLD/DMUON_NCCL_ID_FILE.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dmuon::comm {
class RankComms;
}

namespace dmuon::exec {

enum class Launcher { automatic, threads, mpi, env };
Launcher parse_launcher(const std::string& name, const std::string& what);

// What a rank's body gets: who it is, the world's communicator, an all-gather of host values
// (collective, doubles as a barrier) and, in single-process mode, the flag a failing rank raises.
class RankHandle {
 public:
  RankHandle(comm::RankComms& comms, const std::atomic<bool>* peer_failed, double timeout_seconds)
      : comms_(comms), peer_failed_(peer_failed), timeout_seconds_(timeout_seconds) {}
  int rank() const;
  int world() const;
  comm::RankComms& comms() { return comms_; }
  const std::atomic<bool>* peer_failed() const { return peer_failed_; }
  // Every rank's `values` (same length everywhere), in rank order.
  std::vector<double> all_gather(const std::vector<double>& values);
  // Every rank's vector, any lengths (two all-gathers: lengths, then padded values).
  std::vector<std::vector<double>> all_gather_ragged(const std::vector<double>& values);

 private:
  comm::RankComms& comms_;
  const std::atomic<bool>* peer_failed_;
  double timeout_seconds_;
};

struct LaunchOptions {
  Launcher launcher = Launcher::automatic;  // automatic: mpi if started by mpirun, env if DMUON_RANK is set, else threads
  int threads_world = 0;                    // threads: ranks (0: every visible GPU)
  double bootstrap_timeout_seconds = 120;
  double barrier_timeout_seconds = 300;     // RankHandle::all_gather waits at most this long
};

// Runs `body` on every rank of this process (one rank, or all of them in threads mode).
// Returns 0 when every local rank finished; otherwise prints one line per failed rank to
// stderr ("dmuon: rank R: ...") and returns 1. Under MPI a failed rank aborts the whole job
// after printing. Bootstrap errors are printed and return 2.
int launch_ranks(const LaunchOptions& options, int* argc, char*** argv, const std::function<void(RankHandle&)>& body);

}  // namespace dmuon::exec
