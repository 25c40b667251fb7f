#include "kernels/exec/compute.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/plan/region_runs.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/elementwise.hpp"

namespace dmuon::exec {
namespace {

DType dtype_of(ElementType t) {
  switch (t) {
    case ElementType::bf16: return DType::bf16;
    case ElementType::fp16: return DType::fp16;
    case ElementType::fp32: return DType::fp32;
  }
  return DType::bf16;
}

constexpr int K(BufferKind b) { return static_cast<int>(b); }

cuda::Pitch pitch_of(const RegionRun& run) {
  return run.strided() ? cuda::Pitch{run.width, run.pitch} : cuda::Pitch{};
}

// The engine follows the optimizer config's non-finite policy (the executor accepts only
// `error`: kernels/exec/nccl_executor.hpp), whatever the caller's engine options say.
cuda::NsEngineOptions engine_options(cuda::NsEngineOptions options, const OptimizerConfig& config) {
  options.non_finite = config.muon.nonfinite;
  return options;
}

}  // namespace

ComputeRunner::ComputeRunner(const ModelSpec& model, const Routing& routing, const OptimizerConfig& config,
                             cudaStream_t stream, ComputeOptions options)
    : routing_(routing), config_(config), stream_(stream), options_(options),
      engine_(stream, engine_options(options.engine, config)),
      lr_adjusted_(model.params.size(), std::numeric_limits<double>::quiet_NaN()) {
  for (const MuonMatrix& m : routing.muon_matrices) lr_adjusted_.at(m.param) = adjusted_lr(config.muon, m.rows, m.cols);
  for (const ParamSpec& p : model.params) names_.push_back(p.name);
  const std::size_t counters = std::max<std::size_t>(1, names_.size()) * sizeof(unsigned);
  DMUON_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&nonfinite_), counters));
  DMUON_CUDA_CHECK(cudaMemsetAsync(nonfinite_, 0, counters, stream_));
}

ComputeRunner::~ComputeRunner() {
  if (staging_) (void)cudaFree(staging_);
  if (nonfinite_) (void)cudaFree(nonfinite_);
}

std::string ComputeRunner::nonfinite_gradients() {
  std::vector<unsigned> counts(names_.size());
  if (counts.empty()) return "";
  DMUON_CUDA_CHECK(cudaMemcpyAsync(counts.data(), nonfinite_, counts.size() * sizeof(unsigned), cudaMemcpyDeviceToHost, stream_));
  DMUON_CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::string out;
  for (std::size_t p = 0; p < counts.size(); ++p) {
    if (counts[p] == 0) continue;
    out += (out.empty() ? "'" : ", '") + names_[p] + "' (" + std::to_string(counts[p]) + " elements)";
  }
  return out;
}

void* ComputeRunner::staging(std::size_t bytes) {
  if (bytes <= staging_bytes_) return staging_;
  if (staging_) {
    DMUON_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the old staging may still be in use
    DMUON_CUDA_CHECK(cudaFree(staging_));
    staging_ = nullptr;
    staging_bytes_ = 0;
  }
  DMUON_CUDA_CHECK(cudaMalloc(&staging_, bytes));
  staging_bytes_ = bytes;
  return staging_;
}

void ComputeRunner::launch(const Op& op, DeviceBuffers& b, long adam_step, const std::string& where) {
  switch (op.kind) {
    case OpKind::momentum:
      // One launch per run: a strided member's column block is one pitched launch, not one per row.
      for (const RegionRun& run : region_runs(op.regions)) {
        const Region r = run.span();
        cuda::momentum_update(b.at(BufferKind::grad, r, where), dtype_of(b.type(K(BufferKind::grad))),
                              static_cast<float*>(b.at(BufferKind::momentum, r, where)), b.at(BufferKind::ns_input, r, where),
                              dtype_of(b.type(K(BufferKind::ns_input))), run.elements(), config_.muon, stream_,
                              nonfinite_ + r.param, pitch_of(run));
      }
      return;
    case OpKind::newton_schulz:
      // A member's share needs its group's communicator: RankExecutor runs it (launch_sharded_ns).
      if (is_sharded_ns(op)) throw Error(where + ": a sharded Newton-Schulz op is not a local call");
      newton_schulz(op, b, where);
      return;
    case OpKind::muon_update:
      for (const RegionRun& run : region_runs(op.regions)) {
        const Region r = run.span();
        const double lr_adj = lr_adjusted_.at(r.param);
        if (std::isnan(lr_adj)) throw Error(where + ": parameter '" + names_.at(r.param) + "' has no Muon matrix");
        cuda::muon_update(static_cast<float*>(b.at(kMasterKind, r, where)), b.at(BufferKind::ns_output, r, where),
                          dtype_of(b.type(K(BufferKind::ns_output))), run.elements(), config_.muon.lr,
                          config_.muon.weight_decay, lr_adj, b.at(BufferKind::param, r, where), stream_, pitch_of(run));
      }
      return;
    case OpKind::adamw: launch_adamw({&op}, b, adam_step, where); return;
    default: throw Error(where + ": not a compute op");
  }
}

void ComputeRunner::launch_adamw(const std::vector<const Op*>& ops, DeviceBuffers& b, long adam_step,
                                 const std::string& where) {
  std::vector<cuda::AdamWTensor> tensors;
  for (const Op* op : ops) {
    for (const Region& r : op->regions) {
      if (r.count == 0) continue;
      cuda::AdamWTensor x;
      x.master = static_cast<float*>(b.at(kMasterKind, r, where));
      x.grad = b.at(BufferKind::grad, r, where);
      x.exp_avg = static_cast<float*>(b.at(BufferKind::adam_m, r, where));
      x.exp_avg_sq = static_cast<float*>(b.at(BufferKind::adam_v, r, where));
      x.param_bf16 = b.at(BufferKind::param, r, where);
      x.nonfinite = nonfinite_ + r.param;
      x.numel = r.count;
      tensors.push_back(x);
    }
  }
  if (tensors.empty()) return;
  cuda::adamw_multi_tensor(tensors, dtype_of(b.type(K(BufferKind::grad))), adam_step, config_.adamw, stream_);
}

// One batched engine call for the op's same-shape matrices. In place when matrix i+1 starts
// where matrix i ends in both the input and the output buffer; otherwise the inputs are copied
// into a staging area, run there, and the outputs copied back (all on the compute stream).
void ComputeRunner::newton_schulz(const Op& op, DeviceBuffers& b, const std::string& where) {
  if (op.matrices.empty()) return;
  const MuonMatrix& first = routing_.muon_matrices.at(op.matrices.front());
  const std::size_t esize = element_bytes(b.type(K(BufferKind::ns_input)));
  const std::size_t matrix_bytes = static_cast<std::size_t>(first.rows * first.cols) * esize;
  std::vector<char*> in, out;
  cuda::NsCall call;
  call.rows = first.rows;
  call.cols = first.cols;
  call.batch = static_cast<int>(op.matrices.size());
  call.in_dtype = dtype_of(b.type(K(BufferKind::ns_input)));
  bool back_to_back = true;
  for (std::size_t m : op.matrices) {
    const MuonMatrix& mm = routing_.muon_matrices.at(m);
    if (mm.rows != first.rows || mm.cols != first.cols) {
      throw Error(where + ": matrices of different shapes in one batched Newton-Schulz call (" + first.name + ", " + mm.name + ")");
    }
    const Region r = matrix_region(routing_, m);
    in.push_back(static_cast<char*>(b.at(BufferKind::ns_input, r, where)));
    out.push_back(static_cast<char*>(b.at(BufferKind::ns_output, r, where)));
    call.names.push_back(mm.name);
    if (in.size() > 1) {
      back_to_back = back_to_back && in[in.size() - 1] == in[in.size() - 2] + matrix_bytes &&
                     out[out.size() - 1] == out[out.size() - 2] + matrix_bytes;
    }
  }
  if (back_to_back) {
    call.in = in.front();
    call.out = out.front();
    engine_.run(call, config_.muon.ns, options_.ns_impl);
    return;
  }
  ++staged_calls_;
  char* stage = static_cast<char*>(staging(2 * matrix_bytes * in.size()));
  char* stage_out = stage + matrix_bytes * in.size();
  for (std::size_t i = 0; i < in.size(); ++i) {
    DMUON_CUDA_CHECK(cudaMemcpyAsync(stage + i * matrix_bytes, in[i], matrix_bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  call.in = stage;
  call.out = stage_out;
  engine_.run(call, config_.muon.ns, options_.ns_impl);
  for (std::size_t i = 0; i < out.size(); ++i) {
    DMUON_CUDA_CHECK(cudaMemcpyAsync(out[i], stage_out + i * matrix_bytes, matrix_bytes, cudaMemcpyDeviceToDevice, stream_));
  }
}

void ComputeRunner::launch_sharded_ns(const NsShardMember& member, const cuda::NsShardReduce& reduce, DeviceBuffers& b,
                                      const std::string& where) {
  const MuonMatrix& mm = routing_.muon_matrices.at(member.matrix);
  const ElementType type = b.type(K(BufferKind::ns_input));
  char* in = static_cast<char*>(b.at(BufferKind::ns_input, member.block, where));
  char* out = static_cast<char*>(b.at(BufferKind::ns_output, member.block, where));
  cuda::NsShardCall call;
  call.m = member.m;
  call.columns = member.columns;
  call.column_major = member.column_major;
  if (member.split_products) {
    call.product_members = member.members;
    call.position = member.position;
  }
  call.in_dtype = dtype_of(type);
  call.name = mm.name;
  try {
    if (member.contiguous()) {  // a tall matrix's rows: the engine reads and writes them in place
      call.in = in;
      call.out = out;
      engine_.run_sharded(call, config_.muon.ns, options_.ns_impl, reduce);
      return;
    }
    // A wide matrix's column block is one strided run per row; the engine's normalisation reads
    // contiguous X_j, so it is copied out (2-D copies on the stream), run, and copied back.
    const std::size_t esize = element_bytes(type);
    const std::size_t line = static_cast<std::size_t>(member.line_elements) * esize;
    const std::size_t pitch = static_cast<std::size_t>(member.pitch_elements) * esize;
    const std::size_t rows = static_cast<std::size_t>(member.lines);
    const std::size_t half = (line * rows + 255) / 256 * 256;  // the output aligned as cudaMalloc's
    char* stage = static_cast<char*>(staging(2 * half));
    DMUON_CUDA_CHECK(cudaMemcpy2DAsync(stage, line, in, pitch, line, rows, cudaMemcpyDeviceToDevice, stream_));
    call.in = stage;
    call.out = stage + half;
    engine_.run_sharded(call, config_.muon.ns, options_.ns_impl, reduce);
    DMUON_CUDA_CHECK(cudaMemcpy2DAsync(out, pitch, stage + half, line, line, rows, cudaMemcpyDeviceToDevice, stream_));
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(where, 0) == 0) throw;
    throw Error(where + ": " + what);
  }
}

}  // namespace dmuon::exec
