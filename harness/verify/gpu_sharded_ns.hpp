// The NS engine's sharded call (NsEngine::run_sharded) checked on ONE GPU: k members, each its
// own engine, stream and host thread, whose all-reduces (and all-gathers) are done on the host (each member waits
// for its partial, the sums are taken in member order as the CPU interpreter takes them, and
// copied back). No NCCL: the engine's sharded program (fp32 partial products, the store, both
// layouts, ragged widths, standard and Gram with restarts) is tested apart from communication.
#pragma once
#include <vector>

#include <Eigen/Dense>

#include "core/optimizer/dtype.hpp"
#include "kernels/cuda/ns_engine.hpp"

namespace dmuon::verify {

// `blocks` are the column blocks X_j (m x columns_j) of the wide (m <= n) input, as
// ns_shard_columns cuts them; column_major picks the layout a tall matrix's rows have (X_j
// column-major), else a wide matrix's staged block (row-major). Returns the output blocks.
// split_products: member j computes column block j of every m x m product and the host
// all-gathers them (Op::ns_product_begin); `gathers`, if set, gets how many all-gathers ran. Throws dmuon::Error for what the engine refuses; a
// member's failure stops the others.
std::vector<Eigen::MatrixXd> gpu_sharded_newton_schulz(const std::vector<Eigen::MatrixXd>& blocks, const NsConfig& ns,
                                                       cuda::NsImpl impl, DType in_dtype, bool column_major,
                                                       bool split_products = false, int* gathers = nullptr);

}  // namespace dmuon::verify
