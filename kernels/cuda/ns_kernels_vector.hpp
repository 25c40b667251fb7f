// The vector forms of ns_kernels.hpp's normalisation, identity and mirror kernels (ns_kernels_vector.cu):
// each launches and returns true where every buffer and batch entry is whole 16-byte vectors (and
// DMUON_NS_VECTOR is not 0, the A/B knob), else launches nothing and returns false.
#pragma once
#include <cuda_runtime_api.h>

#include "core/optimizer/dtype.hpp"
#include "core/optimizer/optimizer_config.hpp"

namespace dmuon::cuda {

bool launch_sum_squares_vec(const void* in, DType in_dtype, DType norm_dtype, long elems, int batch, double* sums,
                            cudaStream_t stream);
bool launch_normalize_vec(const void* in, DType in_dtype, const NsConfig& ns, long elems, int batch,
                          const float* divisor, const int* status, void* X, cudaStream_t stream);
bool launch_normalize_transposed_vec(const void* in, DType in_dtype, const NsConfig& ns, long rows, long cols, int batch,
                                     const float* divisor, const int* status, void* X, cudaStream_t stream);
bool launch_add_identity_vec(const void* Z, void* Q, long m, int batch, float a, DType dtype, cudaStream_t stream);
bool launch_mirror_lower_vec(void* A, long m, int batch, DType dtype, cudaStream_t stream);

}  // namespace dmuon::cuda
