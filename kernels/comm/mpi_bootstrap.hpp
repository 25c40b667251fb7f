// MPI only bootstraps a multi-process job (`mpirun -np N`, one process a GPU, also across
// nodes): rank, world size, the local rank that picks the GPU, and the broadcast of the world's
// ncclUniqueId. All data moves through NCCL. Built only when CMake finds MPI
// (DMUON_HAVE_MPI); without it, mpi_available() is false and start_mpi() throws.
#pragma once
#include <nccl.h>

#include "kernels/comm/bootstrap.hpp"

namespace dmuon::comm {

bool mpi_available();
// True when this process looks started by mpirun/srun (OMPI_/PMI_/PMIX_ size variables).
bool launched_by_mpi();

class MpiSession {
 public:
  // MPI_Init; identity from MPI_COMM_WORLD (device = rank within the node); throws dmuon::Error
  // when MPI is not built in or fails.
  MpiSession(int* argc, char*** argv);
  ~MpiSession();  // MPI_Finalize
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  const RankIdentity& identity() const { return identity_; }
  // Rank 0's new id, broadcast to every rank (collective).
  ncclUniqueId broadcast_unique_id();
  // Ends every process of the job (used after a fatal error so no rank is left waiting).
  [[noreturn]] void abort_job(int code);

 private:
  RankIdentity identity_;
};

}  // namespace dmuon::comm
