#include "kernels/comm/bootstrap.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include <cuda_runtime_api.h>

#include "core/error.hpp"
#include "kernels/comm/check.hpp"
#include "kernels/cuda/cuda_check.hpp"

namespace dmuon::comm {
namespace {

int env_int(const char* name, int fallback, bool& present) {
  const char* v = std::getenv(name);
  present = v != nullptr && *v != '\0';
  if (!present) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 20) throw Error(std::string(name) + ": expected a non-negative integer, got '" + v + "'");
  return static_cast<int>(x);
}

}  // namespace

bool identity_from_env(RankIdentity& out) {
  bool has_rank = false, has_world = false, has_device = false;
  const int rank = env_int("DMUON_RANK", 0, has_rank);
  if (!has_rank) return false;
  const int world = env_int("DMUON_WORLD", 1, has_world);
  if (!has_world || world < 1) throw Error("DMUON_WORLD: must be set to the number of ranks (>= 1) with DMUON_RANK");
  if (rank >= world) throw Error("DMUON_RANK: " + std::to_string(rank) + " is not below DMUON_WORLD " + std::to_string(world));
  int devices = 0;
  DMUON_CUDA_CHECK(cudaGetDeviceCount(&devices));
  const int device = env_int("DMUON_DEVICE", devices > 0 ? rank % devices : 0, has_device);
  if (device >= devices) throw Error("DMUON_DEVICE: device " + std::to_string(device) + " of " + std::to_string(devices));
  out = {rank, world, device};
  return true;
}

bool identity_from_launcher(RankIdentity& out, std::string& id_file) {
  struct Names { const char *rank, *size, *local, *job; };
  for (const Names& n : {Names{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_MCA_ess_base_jobid"},
                         Names{"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_JOBID"},
                         Names{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_JOB_ID"}}) {
    bool has_rank = false, has_size = false, has_local = false;
    const int rank = env_int(n.rank, 0, has_rank);
    const int world = env_int(n.size, 1, has_size);
    if (!has_rank || !has_size) continue;
    if (world < 1 || rank >= world) throw Error(std::string(n.rank) + ": rank " + std::to_string(rank) + " of " + std::to_string(world));
    const int local = env_int(n.local, rank, has_local);
    int devices = 0;
    DMUON_CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (local >= devices) {
      throw Error("rank " + std::to_string(rank) + ": local rank " + std::to_string(local) + " but " + std::to_string(devices) +
                  " GPU(s) visible");
    }
    out = {rank, world, local};
    const char* file = std::getenv("DMUON_NCCL_ID_FILE");
    const char* job = std::getenv(n.job);
    if (file && *file) {
      id_file = file;
    } else if (job && *job) {
      id_file = std::string("/tmp/dmuon-nccl-id-") + job;
    } else {
      throw Error(std::string(n.rank) + " is set but neither DMUON_NCCL_ID_FILE nor " + n.job + ": cannot share the NCCL id");
    }
    return true;
  }
  return false;
}

ncclUniqueId unique_id_via_file(const RankIdentity& me, const std::string& path, double timeout_seconds) {
  ncclUniqueId id;
  if (me.rank == 0) {
    DMUON_NCCL_CHECK(ncclGetUniqueId(&id));
    const std::string tmp = path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(&id), sizeof id);
      if (!f) throw Error("rank 0: cannot write the NCCL id file '" + tmp + "'");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error("rank 0: cannot rename '" + tmp + "' to '" + path + "'");
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (true) {
    std::ifstream f(path, std::ios::binary);
    if (f && f.read(reinterpret_cast<char*>(&id), sizeof id) && f.gcount() == sizeof id) return id;
    if (std::chrono::steady_clock::now() > deadline) {
      throw Error("rank " + std::to_string(me.rank) + ": no NCCL id file '" + path + "' from rank 0 after " +
                  std::to_string(timeout_seconds) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<std::string> run_local_ranks(int world, double setup_timeout_seconds,
                                         const std::function<void(RankComms&, std::atomic<bool>&)>& body) {
  int devices = 0;
  DMUON_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (world < 1 || world > devices) {
    throw Error("single-process mode: " + std::to_string(world) + " ranks need as many GPUs, " +
                std::to_string(devices) + " visible");
  }
  ncclUniqueId id;
  DMUON_NCCL_CHECK(ncclGetUniqueId(&id));
  std::vector<std::string> errors(static_cast<std::size_t>(world));
  std::atomic<bool> peer_failed{false};
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        RankComms comms(r, world, r, id, setup_timeout_seconds);
        try {
          body(comms, peer_failed);
        } catch (...) {
          comms.abort_all();  // a failed rank must not leave peers waiting on its communicators
          throw;
        }
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
        peer_failed = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

namespace {

void wait_polling(RankComms& comms, cudaStream_t stream, double timeout_seconds, const std::atomic<bool>* peer_failed) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  std::string cause;
  while (cause.empty()) {
    const cudaError_t s = cudaStreamQuery(stream);
    if (s == cudaSuccess) return;
    if (s != cudaErrorNotReady) cause = std::string("CUDA error: ") + cudaGetErrorString(s);
    else if (const std::string e = comms.async_error(); !e.empty()) cause = "NCCL error: " + e;
    else if (peer_failed && *peer_failed) cause = "a peer rank failed";
    else if (std::chrono::steady_clock::now() > deadline) cause = "timeout after " + std::to_string(timeout_seconds) + " s";
    else std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  comms.abort_all();
  throw Error("rank " + std::to_string(comms.rank()) + ": barrier (all-gather of host values) did not complete: " + cause);
}

}  // namespace

std::vector<double> all_gather_values(RankComms& comms, const std::vector<double>& values, double timeout_seconds,
                                      const std::atomic<bool>* peer_failed) {
  const std::size_t n = values.size();
  std::vector<double> out(n * static_cast<std::size_t>(comms.world()));
  if (n == 0) return out;
  DMUON_CUDA_CHECK(cudaSetDevice(comms.device()));
  double* dev = nullptr;
  DMUON_CUDA_CHECK(cudaMalloc(&dev, out.size() * sizeof(double)));
  try {
    const std::size_t mine = n * static_cast<std::size_t>(comms.rank());
    DMUON_CUDA_CHECK(cudaMemcpy(dev + mine, values.data(), n * sizeof(double), cudaMemcpyHostToDevice));
    DMUON_NCCL_CHECK(ncclAllGather(dev + mine, dev, n, ncclFloat64, comms.world_comm(), cudaStreamPerThread));
    wait_polling(comms, cudaStreamPerThread, timeout_seconds, peer_failed);
    DMUON_CUDA_CHECK(cudaMemcpy(out.data(), dev, out.size() * sizeof(double), cudaMemcpyDeviceToHost));
  } catch (...) {
    if (!comms.aborted()) (void)cudaFree(dev);  // after an abort the stream may still hold it
    throw;
  }
  DMUON_CUDA_CHECK(cudaFree(dev));
  return out;
}

}  // namespace dmuon::comm
