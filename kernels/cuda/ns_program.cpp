#include "kernels/cuda/ns_program.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/plan/ns_sharding.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/ns_kernels.hpp"
#include "kernels/cuda/ns_ops.hpp"
#include "kernels/cuda/sym_gemm_sm90.hpp"

namespace dmuon::cuda {
namespace {

using ns_detail::offset;
using ns_detail::Ops;

std::size_t align256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Block rows of the lower triangle: the symmetric variant computes row block i against columns
// [0, end of block i) only. Block edges are multiples of 128 so sub-block pointers stay aligned.
std::vector<std::pair<long, long>> row_blocks(long m) {
  const int count = m >= 2048 ? 4 : 2;
  long size = (m + count - 1) / count;
  size = std::max<long>(128, (size + 127) / 128 * 128);
  std::vector<std::pair<long, long>> blocks;
  for (long r0 = 0; r0 < m; r0 += size) blocks.emplace_back(r0, std::min(size, m - r0));
  return blocks;
}

// sm90: the sm_90a triangle kernel (X X^T, and m x m products with their epilogue fused).
enum class SymMode { full, blocks, lt_fill, sm90 };

SymMode sym_mode(NsImpl impl) {
  if (impl == NsImpl::symmetric || impl == NsImpl::gram_symmetric) return SymMode::blocks;
  if (impl == NsImpl::symmetric_sm90 || impl == NsImpl::gram_sm90) return SymMode::sm90;
  if (impl == NsImpl::symmetric_lt) return SymMode::lt_fill;
  return SymMode::full;
}

// D = alpha A B + beta C on m x m matrices, B symmetric, as the sm_90a kernel's lower triangle,
// mirrored. D = nullptr: only the operands (for sym_gemm_sm90_unsupported).
SymProduct square_product(const NsGeometry& g, DType dtype, const void* A, const void* B, void* D, float alpha,
                          const void* C, float beta) {
  return SymProduct::square(A, B, g.m, g.batch, dtype, alpha, C, beta, D);
}

// S = X X^T with the symmetric mode's savings, S complete (both triangles) afterwards.
void gram_product(Ops& ops, SymMode mode, const NsGeometry& g, const void* X, void* S, cudaStream_t stream,
                  SymWorkspace sym) {
  if (mode == SymMode::full) return ops.gram(X, S);
  if (mode == SymMode::sm90) {
    // The kernel reads rows of X, so memory must hold X row-major (the wide orientation). The
    // program never asks otherwise (symmetric_sm90 and gram_sm90 normalise a tall input
    // transposed first); enqueue_gram's callers are told here instead of getting X^T X's rows.
    if (g.x_column_major) {
      throw Error("X X^T on the sm_90a kernel: a tall input (" + std::to_string(g.n) + " x " + std::to_string(g.m) +
                  ", memory holding X column-major) cannot be read; pass the wide orientation");
    }
    return launch_sym_xxt_sm90(X, g.m, g.n, g.batch, ops.dtype(), S, stream, sym);
  }
  if (mode == SymMode::lt_fill) {
    ops.gram(X, S, true);
  } else {
    for (auto [r0, rows] : row_blocks(g.m)) ops.run(ops.gram_op(X, S, r0, rows, r0 + rows, false));
  }
  launch_mirror_lower(S, g.m, g.batch, ops.dtype(), stream);
}

// B = c A A + b A (A symmetric), B complete afterwards.
void symmetric_quadratic(Ops& ops, SymMode mode, const NsGeometry& g, const void* A, void* B, float b, float c,
                         cudaStream_t stream, SymWorkspace sym) {
  if (mode == SymMode::full) return ops.square(A, A, B, c, A, b);
  if (mode == SymMode::sm90) {
    return launch_sym_gemm_sm90(square_product(g, ops.dtype(), A, A, B, c, A, b).with_workspace(sym), stream);
  }
  if (mode == SymMode::lt_fill) {
    ops.square(A, A, B, c, A, b, true);
  } else {
    for (auto [r0, rows] : row_blocks(g.m)) ops.run(ops.square_op(A, A, B, c, A, b, r0, rows, r0 + rows, false));
  }
  launch_mirror_lower(B, g.m, g.batch, ops.dtype(), stream);
}

// X X^T into S (compute dtype, both triangles). On one GPU the product `mode` computes. A member
// of a sharded call: its partial product in fp32, summed over the group by `shard`, then stored
// once, as one GEMM over all columns rounds its fp32 accumulator once (the Plan's semantics:
// core/plan/ns_sharding.hpp; the all-reduce only reassociates the sum over columns).
struct GramSum {
  SymMode mode = SymMode::full;
  const NsShardReduce* shard = nullptr;
  float* partial = nullptr;
  SymWorkspace sym;
  void operator()(Ops& ops, const NsGeometry& g, const void* X, void* S, cudaStream_t stream) const {
    if (!shard) return gram_product(ops, mode, g, X, S, stream, sym);
    ops.run(ops.gram_op(X, partial, 0, g.m, g.m, false, true));
    shard->gram(partial, g.s_elems(), stream);
    launch_store_fp32(partial, S, g.s_elems(), ops.dtype(), stream);
  }
};

// A member's share of split m x m products (NsGeometry::product_blocks): its column block of a
// product, and the all-gather that makes a product whole on every member. Off (blocks 1): the
// caller computes the whole product instead.
struct ProductSplit {
  const NsShardReduce* shard = nullptr;
  NsGeometry g;
  bool on() const { return g.product_blocks > 1; }
  // D[:, J] = alpha A B[:, J] + beta C[:, J] for this member's columns J.
  void block(Ops& ops, const void* A, const void* B, void* D, float alpha, const void* C, float beta) const {
    const auto [begin, end] = ns_product_columns(g.m, g.product_blocks, g.product_block);
    ops.column_block(A, B, D, alpha, C, beta, begin, end - begin);
  }
  void gather(void* S, cudaStream_t stream) const { shard->gather(S, g.product_width() * g.m, stream); }
};

bool restarts_before(const NsConfig& ns, int t) {
  return t != 0 && std::find(ns.restarts.begin(), ns.restarts.end(), t) != ns.restarts.end();
}

// A = X X^T; B = bA + cA^2; X = aX + BX, the last step writing `out`. out_column_major: the
// result in a tall input's layout although X is held wide (symmetric_sm90's transposed
// normalisation, enqueue_program): the last step writes X wide, one transposing pass copies it out
// (cuBLASLt cannot read its a X term, C, in another layout than D's).
void standard_iterations(Ops& ops, SymMode mode, const GramSum& gram, const ProductSplit& split, const NsGeometry& g,
                         const NsBuffers& buf, void* out, const NsConfig& ns, cudaStream_t stream,
                         bool out_column_major = false) {
  void* x = buf.x[0];
  void* x_next = buf.x[1];
  void* A = buf.s[0];
  void* B = buf.s[1];
  for (int t = 0; t < ns.steps; ++t) {
    const NsCoefficient k = ns.coefficient(t);
    gram(ops, g, x, A, stream);
    if (split.on()) {
      split.block(ops, A, A, B, static_cast<float>(k.c), A, static_cast<float>(k.b));
      split.gather(B, stream);
    } else {
      symmetric_quadratic(ops, mode, g, A, B, static_cast<float>(k.b), static_cast<float>(k.c), stream, buf.sym);
    }
    void* target = t == ns.steps - 1 && !out_column_major ? out : x_next;
    ops.left(B, x, target, x, static_cast<float>(k.a));
    std::swap(x, x_next);
  }
  if (out_column_major) launch_transpose_16(x, out, g.m, g.n, g.batch, stream);
}

// D = alpha A B + beta C for m x m products whose exact result is symmetric: all of Gram NS's
// (R, Z, Q and their products are polynomials in X X^T, so they commute). blocks: only the
// lower-triangle block rows, then mirrored; sm90: the triangle kernel (B symmetric: every B
// here was itself mirrored, or is R from one full product, symmetric to rounding).
void symmetric_product(Ops& ops, SymMode mode, const NsGeometry& g, const void* A, const void* B, void* D,
                       float alpha, const void* C, float beta, cudaStream_t stream, SymWorkspace sym) {
  if (mode == SymMode::full) return ops.square(A, B, D, alpha, C, beta);
  if (mode == SymMode::sm90) {
    return launch_sym_gemm_sm90(square_product(g, ops.dtype(), A, B, D, alpha, C, beta).with_workspace(sym), stream);
  }
  for (auto [r0, rows] : row_blocks(g.m)) ops.run(ops.square_op(A, B, D, alpha, C, beta, r0, rows, r0 + rows, false));
  launch_mirror_lower(D, g.m, g.batch, ops.dtype(), stream);
}

// Gram NS exactly as reference/newton_schulz.cpp gram_iterations orders and rounds it (with
// `products` blocks or sm90, the m x m products keep their lower triangles and mirror them).
// Split (ProductSplit on): each m x m product is this member's column block; Z and R are
// gathered whole (R Z and R^2 need them), Q and R Z stay in blocks (Z Q[:, J] and Z RZ[:, J]
// read only block J of them) until Q X_j needs Q whole. The gathers follow ns_split_gathers.
// out_column_major: the result in a tall input's layout although X is held wide (gram_sm90's
// transposed normalisation, enqueue_program).
void gram_iterations(Ops& ops, SymMode products, const GramSum& gram, const ProductSplit& split, const NsGeometry& g,
                     const NsBuffers& buf, void* out, const NsConfig& ns, cudaStream_t stream,
                     bool out_column_major = false) {
  void* x = buf.x[0];
  void* x_next = buf.x[1];
  void* R = buf.s[0];
  void* Z = buf.s[1];
  void* Q = buf.s[2];
  void* Q_next = buf.s[3];
  void* RZ = buf.s[4];
  const int last = ns.steps - 1;
  // D = alpha A B + beta C: whole, or this member's block (gathered when `whole` is needed).
  auto product = [&](const void* A, const void* B, void* D, float alpha, const void* C, float beta, bool whole) {
    if (!split.on()) return symmetric_product(ops, products, g, A, B, D, alpha, C, beta, stream, buf.sym);
    split.block(ops, A, B, D, alpha, C, beta);
    if (whole) split.gather(D, stream);
  };
  gram(ops, g, x, R, stream);
  bool have_q = false;
  for (int t = 0; t < ns.steps; ++t) {
    const NsCoefficient k = ns.coefficient(t);
    const float a = static_cast<float>(k.a);
    if (restarts_before(ns, t) && have_q) {
      if (split.on()) split.gather(Q, stream);
      ops.left(Q, x, x_next, nullptr, 0.0f);
      std::swap(x, x_next);
      gram(ops, g, x, R, stream);
      have_q = false;
    }
    product(R, R, Z, static_cast<float>(k.c), R, static_cast<float>(k.b), true);
    if (have_q) {
      // Z Q + a Q, DMuon's addmm(Q, Z, Q, beta=a): the two orders differ once rounded (2.0e-2 against
      // 3.4e-3 from DMuon's own result on a 128x128 input on the reference; reports/dmuon-goldens.md).
      product(Z, Q, Q_next, 1.0f, Q, a, false);
      std::swap(Q, Q_next);
    } else {
      launch_add_identity(Z, Q, g.m, g.batch, a, ops.dtype(), stream);
      have_q = true;
    }
    if (t < last && !restarts_before(ns, t + 1)) {
      product(R, Z, RZ, 1.0f, R, a, false);
      product(Z, RZ, R, 1.0f, RZ, a, true);
    }
  }
  if (split.on()) split.gather(Q, stream);
  if (out_column_major) return ops.left_column_major(Q, x, out);
  ops.left(Q, x, out, nullptr, 0.0f);
}

}  // namespace

NsGeometry geometry_of(long rows, long cols, int batch) {
  NsGeometry g;
  g.m = std::min(rows, cols);
  g.n = std::max(rows, cols);
  g.x_column_major = rows > cols;
  g.batch = batch;
  return g;
}

std::size_t ns_buffer_bytes(const NsGeometry& g, DType compute, bool sharded) {
  const std::size_t e = static_cast<std::size_t>(bytes_per_element(compute));
  const std::size_t x = align256(e * g.x_elems() * g.batch);
  const std::size_t s = align256(e * g.s_capacity() * g.batch);
  const std::size_t scalars = 3 * align256(sizeof(double) * g.batch);
  const std::size_t partial = sharded ? align256(sizeof(float) * g.s_elems() * g.batch) : 0;
  return align256(sym_gemm_sm90_workspace_bytes()) + 2 * x + 5 * s + scalars + partial;
}

NsBuffers carve_ns_buffers(void* arena, const NsGeometry& g, DType compute, bool sharded) {
  const std::size_t e = static_cast<std::size_t>(bytes_per_element(compute));
  const std::size_t x = align256(e * g.x_elems() * g.batch);
  const std::size_t s = align256(e * g.s_capacity() * g.batch);
  char* p = static_cast<char*>(arena);
  NsBuffers b;
  b.sym = {p, sym_gemm_sm90_workspace_bytes()};
  if (b.sym.bytes == 0) b.sym.ptr = nullptr;
  p += align256(b.sym.bytes);
  for (auto& xi : b.x) { xi = p; p += x; }
  for (auto& si : b.s) { si = p; p += s; }
  const std::size_t scalar = align256(sizeof(double) * g.batch);
  b.sums = reinterpret_cast<double*>(p);
  b.divisor = reinterpret_cast<float*>(p + scalar);
  b.status = reinterpret_cast<int*>(p + 2 * scalar);
  if (sharded) b.partial = reinterpret_cast<float*>(p + 3 * scalar);
  return b;
}

namespace {

// The sm_90a kernel takes X X^T: it reads rows of X (K-major), so only the wide orientation,
// where memory holds X^T column-major, i.e. X row-major, with n a multiple of 8.
bool sm90_takes_gram(const NsGeometry& g, DType compute, const void* X) {
  return !g.x_column_major && sym_xxt_sm90_unsupported(g.m, g.n, compute, X).empty();
}

// The same geometry held wide (X row-major): how the sm_90 programs run a tall input after its
// transposed normalisation (enqueue_program).
NsGeometry wide_orientation(NsGeometry g) {
  g.x_column_major = false;
  return g;
}

// The mode of a program's m x m products: the sm_90a variants hand them to one full cuBLAS GEMM
// where the kernel would leave the GPU underfilled (sym_gemm_sm90_underfills: m <= 2048 in batch
// 1 on an H100), keeping the kernel for X X^T, whose long k stream-K spreads over every SM.
SymMode square_mode(SymMode mode, const NsGeometry& g) {
  return mode == SymMode::sm90 && sym_gemm_sm90_underfills(g.m, g.batch) ? SymMode::full : mode;
}

}  // namespace

bool ns_impl_supported(LtGemm& gemm, NsImpl impl, const NsGeometry& g, const NsBuffers& buf, DType compute) {
  // Both take the m x m products through the kernel (m a multiple of 8); symmetric_sm90 also
  // X X^T, while gram_sm90 forms R with one full product where the kernel cannot.
  // A tall input counts as its wide orientation: enqueue_program normalises it transposed.
  if (impl == NsImpl::symmetric_sm90 || impl == NsImpl::gram_sm90) {
    const bool squares =
        sym_gemm_sm90_unsupported(square_product(g, compute, buf.s[0], buf.s[1], nullptr, 1.0f, nullptr, 0.0f)).empty();
    return squares && (impl == NsImpl::gram_sm90 || sm90_takes_gram(wide_orientation(g), compute, buf.x[0]));
  }
  if (impl != NsImpl::symmetric_lt) return true;
  Ops ops(gemm, nullptr, g, compute);
  return ops.supported(ops.gram_op(buf.x[0], buf.s[0], 0, g.m, g.m, true)) &&
         ops.supported(ops.square_op(buf.s[0], buf.s[0], buf.s[1], 1.0f, buf.s[0], 1.0f, 0, g.m, g.m, true));
}

void enqueue_gram(LtGemm& gemm, cudaStream_t stream, NsImpl impl, const NsGeometry& g, const void* X, void* S,
                  DType compute, SymWorkspace sym) {
  Ops ops(gemm, stream, g, compute);
  gram_product(ops, sym_mode(impl), g, X, S, stream, sym);
}

void enqueue_quadratic(LtGemm& gemm, cudaStream_t stream, NsImpl impl, const NsGeometry& g, const void* A, void* B,
                       float b, float c, DType compute, SymWorkspace sym) {
  Ops ops(gemm, stream, g, compute);
  symmetric_quadratic(ops, sym_mode(impl), g, A, B, b, c, stream, sym);
}

namespace {

// One call, or one member's share of a sharded call (`shard` set): the squared norm summed over
// the group before the normaliser is taken from it, every X X^T through GramSum.
void enqueue_program(LtGemm& gemm, cudaStream_t stream, NsImpl impl, const NsGeometry& g, const NsBuffers& buf,
                     const void* in, DType in_dtype, void* out, const NsConfig& ns, const NsShardReduce* shard) {
  if (impl == NsImpl::automatic) throw Error("enqueue_ns: resolve NsImpl::automatic first");
  // Before any collective is enqueued: a member that throws later would leave its peers waiting.
  if (g.product_blocks > 1 && (!shard || !shard->gather)) throw Error("enqueue_sharded_ns: split products need an all-gather");
  const long elems = g.x_elems();
  launch_sum_squares(in, in_dtype, ns.normalize_dtype, elems, g.batch, buf.sums, stream);
  if (shard) shard->norm(buf.sums, stream);
  launch_norm_scale(buf.sums, g.batch, ns, buf.divisor, buf.status, stream);
  // symmetric_sm90 / gram_sm90 on a tall input: memory holds X column-major, whose rows the
  // kernel cannot read, so every X X^T would be a full product (gram_sm90) or impossible
  // (symmetric_sm90). Normalising into X row-major instead (one transposed pass) lets the whole
  // program run wide; the result goes back to the input's layout at the end (gram: in its last
  // product; standard: one transposing pass). Same products, same rounding points: only the
  // memory layout differs.
  const NsGeometry wide = wide_orientation(g);
  const bool transposed = (impl == NsImpl::gram_sm90 || impl == NsImpl::symmetric_sm90) && g.x_column_major && !shard &&
                          ns.steps > 0 && sm90_takes_gram(wide, ns.compute_dtype, buf.x[0]);
  if (transposed) {
    launch_normalize_transposed(in, in_dtype, ns, g.n, g.m, g.batch, buf.divisor, buf.status, buf.x[0], stream);
    Ops ops(gemm, stream, wide, ns.compute_dtype);
    const SymMode products = square_mode(SymMode::sm90, wide);
    const GramSum gram{SymMode::sm90, nullptr, nullptr, buf.sym};
    if (impl == NsImpl::gram_sm90) {
      return gram_iterations(ops, products, gram, ProductSplit{nullptr, wide}, wide, buf, out, ns, stream, true);
    }
    return standard_iterations(ops, products, gram, ProductSplit{nullptr, wide}, wide, buf, out, ns, stream, true);
  }
  launch_normalize(in, in_dtype, ns, elems, g.batch, buf.divisor, buf.status, buf.x[0], stream);
  if (ns.steps == 0) {
    DMUON_CUDA_CHECK(cudaMemcpyAsync(out, buf.x[0], elems * g.batch * bytes_per_element(ns.compute_dtype),
                                     cudaMemcpyDeviceToDevice, stream));
    return;
  }
  Ops ops(gemm, stream, g, ns.compute_dtype);
  const ProductSplit split{shard, g};
  if (kernel_family(impl) == NsKernel::gram) {
    // gram and gram_symmetric form R = X X^T with one full product (blocks only for their m x m
    // products); gram_sm90 with the kernel where it takes X.
    const SymMode r_mode = impl == NsImpl::gram_sm90 && sm90_takes_gram(g, ns.compute_dtype, buf.x[0]) ? SymMode::sm90
                                                                                                       : SymMode::full;
    return gram_iterations(ops, square_mode(sym_mode(impl), g), GramSum{r_mode, shard, buf.partial, buf.sym}, split, g,
                           buf, out, ns, stream);
  }
  standard_iterations(ops, square_mode(sym_mode(impl), g), GramSum{sym_mode(impl), shard, buf.partial, buf.sym}, split,
                      g, buf, out, ns, stream);
}

}  // namespace

void enqueue_ns(LtGemm& gemm, cudaStream_t stream, NsImpl impl, const NsGeometry& g, const NsBuffers& buf,
                const void* in, DType in_dtype, void* out, const NsConfig& ns) {
  enqueue_program(gemm, stream, impl, g, buf, in, in_dtype, out, ns, nullptr);
}

void enqueue_sharded_ns(LtGemm& gemm, cudaStream_t stream, NsImpl impl, const NsGeometry& g, const NsBuffers& buf,
                        const void* in, DType in_dtype, void* out, const NsConfig& ns, const NsShardReduce& reduce) {
  if (g.batch != 1 || !buf.partial || !reduce.norm || !reduce.gram) {
    throw Error("enqueue_sharded_ns: one matrix, a partial-product buffer and both all-reduces are required");
  }
  if (impl == NsImpl::symmetric_sm90 || impl == NsImpl::gram_sm90 || impl == NsImpl::symmetric_lt) {
    throw Error("enqueue_sharded_ns: " + std::string(to_string(impl)) + " is not a sharded implementation (sharded_impl)");
  }
  enqueue_program(gemm, stream, impl, g, buf, in, in_dtype, out, ns, &reduce);
}

}  // namespace dmuon::cuda
