// How the ranks of one job learn who they are and share the world's ncclUniqueId, and the
// single-process mode that drives every local GPU from one thread each. MPI is the other way
// (kernels/comm/mpi_bootstrap.hpp, built only when MPI is found).
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include <nccl.h>

#include "kernels/comm/world.hpp"

namespace dmuon::comm {

struct RankIdentity {
  int rank = 0, world = 1;
  int device = 0;  // the CUDA device this rank drives
};

// Processes started by hand or by a test (no MPI): DMUON_RANK, DMUON_WORLD, optional
// DMUON_DEVICE (default: rank modulo the visible devices) and DMUON_NCCL_ID_FILE. Returns false
// when DMUON_RANK is unset; throws dmuon::Error naming the variable when one is malformed.
bool identity_from_env(RankIdentity& out);
// Started by mpirun or srun in a build without MPI: the identity from the launcher's own
// variables (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK, PMI_RANK/PMI_SIZE, SLURM_PROCID/NTASKS/LOCALID),
// and `id_file` = DMUON_NCCL_ID_FILE or a per-job file under /tmp (one node, or a shared /tmp).
// Returns false when no launcher variables are set.
bool identity_from_launcher(RankIdentity& out, std::string& id_file);
// Rank 0 creates the id and publishes it atomically (write, then rename) at `path`; the others
// wait for the file up to `timeout_seconds`. Throws dmuon::Error naming the rank and the file.
ncclUniqueId unique_id_via_file(const RankIdentity& me, const std::string& path, double timeout_seconds);

// Single-process mode: one thread per rank (rank r drives device r), each with its own
// RankComms, running `body`. When a rank throws, `peer_failed` is raised so the others stop
// waiting and abort; returns each rank's error message ("" for a rank that finished).
// `setup_timeout_seconds` bounds communicator set-up (RankComms).
std::vector<std::string> run_local_ranks(int world, double setup_timeout_seconds, const std::function<void(RankComms&, std::atomic<bool>& peer_failed)>& body);

// Every rank's `values` (same length on every rank), concatenated in rank order, on every rank:
// an all-gather over the world communicator (collective; also a barrier). Waits by polling, as
// the executor does: an NCCL error, a peer's failure or `timeout_seconds` aborts the
// communicators and throws dmuon::Error naming the rank.
std::vector<double> all_gather_values(RankComms& comms, const std::vector<double>& values, double timeout_seconds,
                                      const std::atomic<bool>* peer_failed = nullptr);

}  // namespace dmuon::comm
