#include "kernels/exec/launch.hpp"

#include <cstdlib>
#include <iostream>

#include <cuda_runtime_api.h>

#include "core/error.hpp"
#include "kernels/comm/bootstrap.hpp"
#include "kernels/comm/world.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/comm/mpi_bootstrap.hpp"

namespace dmuon::exec {

Launcher parse_launcher(const std::string& name, const std::string& what) {
  if (name == "auto") return Launcher::automatic;
  if (name == "threads") return Launcher::threads;
  if (name == "mpi") return Launcher::mpi;
  if (name == "env") return Launcher::env;
  throw Error(what + ": expected auto, threads, mpi or env, got '" + name + "'");
}

int RankHandle::rank() const { return comms_.rank(); }
int RankHandle::world() const { return comms_.world(); }

std::vector<double> RankHandle::all_gather(const std::vector<double>& values) { return comm::all_gather_values(comms_, values, timeout_seconds_, peer_failed_); }

std::vector<std::vector<double>> RankHandle::all_gather_ragged(const std::vector<double>& values) {
  const std::vector<double> sizes = all_gather({static_cast<double>(values.size())});
  std::size_t longest = 0;
  for (double s : sizes) longest = std::max(longest, static_cast<std::size_t>(s));
  std::vector<double> padded = values;
  padded.resize(longest, 0.0);
  const std::vector<double> all = all_gather(padded);
  std::vector<std::vector<double>> out;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    const auto begin = all.begin() + static_cast<long>(r * longest);
    out.emplace_back(begin, begin + static_cast<long>(sizes[r]));
  }
  return out;
}

namespace {

// One process, one rank (MPI or env): runs the body; on failure prints the error naming the
// rank and returns 1 (after aborting the communicators, so peers see an error, not a hang).
int run_one(comm::RankComms& comms, double timeout, const std::function<void(RankHandle&)>& body) {
  try {
    RankHandle h(comms, nullptr, timeout);
    body(h);
    return 0;
  } catch (const std::exception& e) {
    comms.abort_all();
    const std::string what = e.what();
    std::cerr << "dmuon: " << (what.rfind("rank ", 0) == 0 ? "" : "rank " + std::to_string(comms.rank()) + ": ") << what
              << std::endl;
    return 1;
  }
}

// mpirun without MPI in this build still works on one node: the launcher's variables and an id
// file replace MPI (Launcher::env).
Launcher resolve(Launcher l) {
  if (l == Launcher::mpi && !comm::mpi_available() && comm::launched_by_mpi()) return Launcher::env;
  if (l != Launcher::automatic) return l;
  if (comm::launched_by_mpi()) return comm::mpi_available() ? Launcher::mpi : Launcher::env;
  comm::RankIdentity id;
  if (comm::identity_from_env(id)) return Launcher::env;
  return Launcher::threads;
}

}  // namespace

int launch_ranks(const LaunchOptions& options, int* argc, char*** argv, const std::function<void(RankHandle&)>& body) {
  Launcher launcher = Launcher::threads;
  try {
    launcher = resolve(options.launcher);
    if (launcher == Launcher::mpi) {
      comm::MpiSession mpi(argc, argv);
      const comm::RankIdentity me = mpi.identity();
      const ncclUniqueId id = mpi.broadcast_unique_id();
      int code = 0;
      {
        comm::RankComms comms(me.rank, me.world, me.device, id, options.bootstrap_timeout_seconds);
        code = run_one(comms, options.barrier_timeout_seconds, body);
      }
      if (code != 0) mpi.abort_job(code);  // the other processes must not wait for this one
      return code;
    }
    if (launcher == Launcher::env) {
      comm::RankIdentity me;
      std::string file;
      if (comm::identity_from_env(me)) {
        const char* f = std::getenv("DMUON_NCCL_ID_FILE");
        if (!f || !*f) throw Error("DMUON_NCCL_ID_FILE: must name a file every rank can read");
        file = f;
      } else if (!comm::identity_from_launcher(me, file)) {
        throw Error("--launcher env: neither DMUON_RANK nor an mpirun/srun rank variable is set");
      }
      const ncclUniqueId id = comm::unique_id_via_file(me, file, options.bootstrap_timeout_seconds);
      comm::RankComms comms(me.rank, me.world, me.device, id, options.bootstrap_timeout_seconds);
      return run_one(comms, options.barrier_timeout_seconds, body);
    }
    int world = options.threads_world;
    if (world <= 0) DMUON_CUDA_CHECK(cudaGetDeviceCount(&world));
    const auto errors = comm::run_local_ranks(world, options.bootstrap_timeout_seconds, [&](comm::RankComms& comms, std::atomic<bool>& failed) {
      RankHandle h(comms, &failed, options.barrier_timeout_seconds);
      body(h);
    });
    int code = 0;
    for (std::size_t r = 0; r < errors.size(); ++r) {
      if (errors[r].empty()) continue;
      std::cerr << "dmuon: " << (errors[r].rfind("rank ", 0) == 0 ? "" : "rank " + std::to_string(r) + ": ") << errors[r]
                << std::endl;
      code = 1;
    }
    return code;
  } catch (const std::exception& e) {
    std::cerr << "dmuon: " << e.what() << std::endl;
    return 2;
  }
}

}  // namespace dmuon::exec
