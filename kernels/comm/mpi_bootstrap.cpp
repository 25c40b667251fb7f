#include "kernels/comm/mpi_bootstrap.hpp"

#include <cstdlib>

#include <cuda_runtime_api.h>

#include "core/error.hpp"
#include "kernels/comm/check.hpp"
#include "kernels/cuda/cuda_check.hpp"

#ifdef DMUON_HAVE_MPI
// The C API only: the deprecated C++ bindings do not compile cleanly with -Wextra -Werror.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace dmuon::comm {

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(v)) return true;
  }
  return false;
}

#ifdef DMUON_HAVE_MPI

namespace {

void mpi_check(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(status, text, &len);
  throw Error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

}  // namespace

bool mpi_available() { return true; }

MpiSession::MpiSession(int* argc, char*** argv) {
  mpi_check(MPI_Init(argc, argv), "MPI_Init");
  int rank = 0, world = 1, local = 0;
  mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &world), "MPI_Comm_size");
  // The rank within this node picks the GPU: ranks sharing memory are on one host.
  MPI_Comm node;
  mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  mpi_check(MPI_Comm_rank(node, &local), "MPI_Comm_rank(node)");
  MPI_Comm_free(&node);
  int devices = 0;
  DMUON_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (local >= devices) {
    throw Error("rank " + std::to_string(rank) + ": local rank " + std::to_string(local) + " but only " +
                std::to_string(devices) + " GPU(s) on this node");
  }
  identity_ = {rank, world, local};
}

MpiSession::~MpiSession() { MPI_Finalize(); }

ncclUniqueId MpiSession::broadcast_unique_id() {
  ncclUniqueId id;
  if (identity_.rank == 0) DMUON_NCCL_CHECK(ncclGetUniqueId(&id));
  mpi_check(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast(ncclUniqueId)");
  return id;
}

void MpiSession::abort_job(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

#else

bool mpi_available() { return false; }

MpiSession::MpiSession(int*, char***) {
  throw Error("this build has no MPI (install an MPI and reconfigure); use the single-process mode instead");
}
MpiSession::~MpiSession() = default;
ncclUniqueId MpiSession::broadcast_unique_id() { throw Error("no MPI in this build"); }
void MpiSession::abort_job(int code) { std::exit(code); }

#endif

}  // namespace dmuon::comm
