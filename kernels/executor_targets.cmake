# dmuon_executor: the NCCL executor of a Plan (issue 5), on top of dmuon_kernels. NCCL comes from
# the CUDA toolkit (here) or the system (the GPU machine); MPI only bootstraps multi-process
# jobs and is optional: without it the single-process mode (one thread a GPU) still builds.
find_path(DMUON_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_library(DMUON_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
if(NOT DMUON_NCCL_INCLUDE_DIR OR NOT DMUON_NCCL_LIBRARY)
  message(STATUS "dmuon: NCCL not found, dmuon_executor not built")
  return()
endif()
find_package(MPI QUIET COMPONENTS CXX)  # the C API through the CXX component: the project enables no C

add_library(dmuon_executor
  comm_world.cpp
  comm_watchdog.cpp
  comm_bootstrap.cpp
  mpi_bootstrap.cpp
  executor_buffers.cpp
  executor_collectives.cpp
  executor_compute.cpp
  nccl_executor.cpp
  executor_deps.cpp
  executor_launch.cpp
  executor_bench.cpp
  compute_standin.cpp
  executor_session.cpp
  executor_fill.cpp
  executor_fill.cu
  comm_sweep.cpp
)
# The .cu file sees no core header: C++17 is enough for it and known to every CMake/nvcc pair.
set_source_files_properties(executor_fill.cu PROPERTIES COMPILE_OPTIONS "-std=c++17")
target_include_directories(dmuon_executor PUBLIC ${DMUON_NCCL_INCLUDE_DIR})
target_link_libraries(dmuon_executor PUBLIC dmuon_kernels ${DMUON_NCCL_LIBRARY} CUDA::cudart Threads::Threads)
target_compile_options(dmuon_executor PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${DMUON_CUDA_HOST_FLAGS}>)
if(MPI_CXX_FOUND)
  target_link_libraries(dmuon_executor PRIVATE MPI::MPI_CXX)
  target_compile_definitions(dmuon_executor PRIVATE DMUON_HAVE_MPI=1)
endif()
message(STATUS "dmuon: NCCL executor with NCCL ${DMUON_NCCL_LIBRARY}, MPI ${MPI_CXX_FOUND}")
