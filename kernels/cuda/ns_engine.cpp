#include "kernels/cuda/ns_engine.hpp"

#include <cmath>
#include <sstream>

#include "core/error.hpp"
#include "core/optimizer/ns_rounding.hpp"
#include "core/plan/ns_sharding.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/ns_engine_state.hpp"
#include "kernels/cuda/ns_kernels.hpp"

namespace dmuon::cuda {
namespace {

constexpr std::size_t kMaxGraphs = 256;

// Every semantic knob of the config, for graph and tuning keys.
std::string config_fingerprint(const NsConfig& ns) {
  std::ostringstream s;
  s.precision(17);
  s << to_string(ns.variant) << "|" << ns.steps << "|" << to_string(ns.compute_dtype) << "|"
    << to_string(ns.normalize_dtype) << "|" << to_string(ns.norm_mode) << "|" << ns.norm_scale << "|" << ns.eps
    << "|r";
  for (int r : ns.restarts) s << r << ",";
  s << "|c";
  for (int t = 0; t < ns.steps; ++t) {
    const NsCoefficient k = ns.coefficient(t);
    s << k.a << "," << k.b << "," << k.c << ";";
  }
  return s.str();
}

std::string graph_key(NsImpl impl, const NsCall& call, const NsConfig& ns) {
  std::ostringstream s;
  s << to_string(impl) << "|" << call.rows << "x" << call.cols << "|" << call.batch << "|"
    << to_string(call.in_dtype) << "|" << call.in << "|" << call.out << "|" << config_fingerprint(ns);
  return s.str();
}

void validate_call(const NsCall& call, const NsConfig& ns) {
  if (call.rows <= 0 || call.cols <= 0 || call.batch <= 0) {
    throw Error("NsEngine::run: rows, cols and batch must be positive, got " + std::to_string(call.rows) + "x" +
                std::to_string(call.cols) + " batch " + std::to_string(call.batch));
  }
  if (!call.in || !call.out) throw Error("NsEngine::run: null input or output pointer");
  if (call.in_dtype == DType::fp64) throw Error("NsEngine::run: input dtype must be fp32, bf16 or fp16");
  if (ns.compute_dtype != DType::bf16 && ns.compute_dtype != DType::fp16) {
    throw Error("NsEngine::run: ns.compute_dtype must be bf16 or fp16, got " +
                std::string(to_string(ns.compute_dtype)));
  }
  if (ns.normalize_dtype == DType::fp64) throw Error("NsEngine::run: ns.normalize_dtype fp64 is not supported on GPU");
  if (call.in == call.out && call.in_dtype != ns.compute_dtype) {
    throw Error("NsEngine::run: in and out alias but in_dtype differs from ns.compute_dtype");
  }
  if (!call.names.empty() && static_cast<int>(call.names.size()) != call.batch) {
    throw Error("NsEngine::run: " + std::to_string(call.names.size()) + " names for a batch of " +
                std::to_string(call.batch));
  }
  if (ns.steps < 0) throw Error("NsEngine::run: ns.steps must be >= 0");
  if (ns.products != NsProducts::fused) {
    // Separate rounding (DMuon's direct_newton_schulz) would be 4 more elementwise passes a step;
    // the CPU reference has it, the GPU engine runs fused epilogues only.
    throw Error("NsEngine::run: ns.products " + std::string(to_string(ns.products)) +
                " is not supported on GPU (fused only); use the CPU reference");
  }
}

std::string matrix_name(const NsCall& call, int i) {
  return call.names.empty() ? "matrix " + std::to_string(i) : call.names[i];
}

}  // namespace

std::string_view to_string(NsImpl impl) {
  switch (impl) {
    case NsImpl::automatic: return "automatic";
    case NsImpl::standard: return "standard";
    case NsImpl::symmetric: return "symmetric";
    case NsImpl::symmetric_lt: return "symmetric_lt";
    case NsImpl::symmetric_sm90: return "symmetric_sm90";
    case NsImpl::gram: return "gram";
    case NsImpl::gram_symmetric: return "gram_symmetric";
    case NsImpl::gram_sm90: return "gram_sm90";
  }
  return "?";
}

NsImpl parse_ns_impl(std::string_view name, const std::string& what) {
  for (NsImpl i : {NsImpl::automatic, NsImpl::standard, NsImpl::symmetric, NsImpl::symmetric_lt,
                   NsImpl::symmetric_sm90, NsImpl::gram, NsImpl::gram_symmetric, NsImpl::gram_sm90}) {
    if (name == to_string(i)) return i;
  }
  throw Error(what + ": unknown NS implementation '" + std::string(name) +
              "' (automatic, standard, symmetric, symmetric_lt, symmetric_sm90, gram, gram_symmetric, gram_sm90)");
}

NsKernel kernel_family(NsImpl impl) {
  switch (impl) {
    case NsImpl::standard: return NsKernel::standard;
    case NsImpl::symmetric:
    case NsImpl::symmetric_lt:
    case NsImpl::symmetric_sm90: return NsKernel::symmetric;
    case NsImpl::gram:
    case NsImpl::gram_symmetric:
    case NsImpl::gram_sm90: return NsKernel::gram;
    case NsImpl::automatic: break;
  }
  throw Error("kernel_family: NsImpl::automatic has no kernel family");
}

std::vector<NsImpl> candidate_impls(const NsConfig& ns, long rows, long cols) {
  std::vector<NsImpl> out = {NsImpl::standard, NsImpl::symmetric, NsImpl::symmetric_lt, NsImpl::symmetric_sm90};
  // Row blocks smaller than one 128-row tile buy nothing: below 256 only the full product.
  if (std::min(rows, cols) < 256) out = {NsImpl::standard};
  if (ns.variant == NsVariant::gram) {
    if (std::min(rows, cols) >= 256) out.insert(out.begin(), {NsImpl::gram_symmetric, NsImpl::gram_sm90});
    out.insert(out.begin(), NsImpl::gram);
  }
  return out;
}

double accuracy_gate(const NsConfig& ns) {
  // A candidate and `standard` each carry their own rounding error, so the gate is the sum of
  // both allowances (the CPU suite's gram-vs-standard rule), from the rounding analysis in
  // core/optimizer/ns_rounding.cpp at kappa 1: bf16 standard 2 x 6.9u = 0.054, fp16 standard 0.0068; fp16
  // Gram with DMuon's schedule (6.9u + 39.1u) = 0.0225. That last is at bf16's level although fp16
  // rounds 8x finer because Gram stores Polar Express's a_t in fp16 (a*I) and the schedule
  // amplifies that 31u at s = 1; the Q Z order the engine used before 2026-11-23 (DMuon: Z Q)
  // added its own drift. (Was 0.04 / 0.008, x2 for Gram, set from measured runs.)
  NsConfig standard = ns;
  standard.variant = NsVariant::standard;
  standard.restarts.clear();
  return ns_rounding_tolerance(ns, 1.0) + ns_rounding_tolerance(standard, 1.0);
}

NsEngine::State::~State() {
  drop_graphs();
  device_free(arena);
  if (status_host) cudaFreeHost(status_host);
  if (owns_stream && stream) cudaStreamDestroy(stream);
}

void NsEngine::State::drop_graphs() {
  for (auto& [key, exec] : graphs) cudaGraphExecDestroy(exec);
  graphs.clear();
}

NsBuffers NsEngine::State::buffers(const NsGeometry& g, DType compute, bool sharded) {
  const std::size_t need = ns_buffer_bytes(g, compute, sharded);
  const bool fresh = need > arena_bytes;
  if (fresh) {
    DMUON_CUDA_CHECK(cudaStreamSynchronize(stream));  // graphs in flight may still use the old arena
    drop_graphs();
    device_free(arena);
    arena = nullptr;
    arena_bytes = 0;
    arena = device_alloc(need, "Newton-Schulz buffers for " + std::to_string(g.m) + "x" + std::to_string(g.n) +
                                   " batch " + std::to_string(g.batch));
    arena_bytes = need;
  }
  const NsBuffers buf = carve_ns_buffers(arena, g, compute, sharded);
  // A new arena's stream-K flags start at zero; every launch leaves them so (sym_gemm_sm90.hpp).
  if (fresh && buf.sym.ptr) DMUON_CUDA_CHECK(cudaMemsetAsync(buf.sym.ptr, 0, buf.sym.bytes, stream));
  return buf;
}

void NsEngine::State::ensure_status_capacity(int batch) {
  if (batch <= status_capacity) return;
  if (status_host) cudaFreeHost(status_host);
  status_host = nullptr;
  DMUON_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&status_host), sizeof(int) * batch));
  status_capacity = batch;
}

NsEngine::NsEngine(Stream stream, NsEngineOptions options) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
  if (stream) {
    state_->stream = stream;
  } else {
    // The legacy default stream cannot be captured into a graph; a blocking stream still
    // orders with it, so callers using the default stream see the same ordering.
    DMUON_CUDA_CHECK(cudaStreamCreate(&state_->stream));
    state_->owns_stream = true;
  }
  int device = 0;
  DMUON_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  DMUON_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  state_->gpu = prop.name;
  state_->load_cache();
}

NsEngine::~NsEngine() = default;

NsOutcome NsEngine::run(const NsCall& call, const NsConfig& ns, NsImpl impl) {
  validate_call(call, ns);
  State& st = *state_;
  if (impl == NsImpl::automatic) impl = chosen(call.rows, call.cols, call.batch, ns);
  const NsGeometry g = geometry_of(call.rows, call.cols, call.batch);
  const NsBuffers buf = st.buffers(g, ns.compute_dtype);
  if (!ns_impl_supported(st.gemm, impl, g, buf, ns.compute_dtype)) {
    throw Error("NsEngine::run: implementation " + std::string(to_string(impl)) + " is not available for " +
                std::to_string(call.rows) + "x" + std::to_string(call.cols) + " on " + st.gpu);
  }
  if (st.options.use_graphs) {
    const std::string key = graph_key(impl, call, ns);
    auto it = st.graphs.find(key);
    if (it == st.graphs.end()) {
      // Callers that pass fresh buffers every call would grow the cache without bound.
      if (st.graphs.size() >= kMaxGraphs) {
        DMUON_CUDA_CHECK(cudaStreamSynchronize(st.stream));
        st.drop_graphs();
      }
      cudaGraph_t graph = nullptr;
      DMUON_CUDA_CHECK(cudaStreamBeginCapture(st.stream, cudaStreamCaptureModeThreadLocal));
      try {
        enqueue_ns(st.gemm, st.stream, impl, g, buf, call.in, call.in_dtype, call.out, ns);
      } catch (...) {
        cudaStreamEndCapture(st.stream, &graph);
        if (graph) cudaGraphDestroy(graph);
        throw;
      }
      DMUON_CUDA_CHECK(cudaStreamEndCapture(st.stream, &graph));
      cudaGraphExec_t exec = nullptr;
      const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);
      DMUON_CUDA_CHECK(status);
      it = st.graphs.emplace(key, exec).first;
    }
    DMUON_CUDA_CHECK(cudaGraphLaunch(it->second, st.stream));
  } else {
    enqueue_ns(st.gemm, st.stream, impl, g, buf, call.in, call.in_dtype, call.out, ns);
  }
  NsOutcome outcome;
  outcome.impl = impl;
  return st.checked(outcome, buf, call, ns);
}

NsImpl sharded_impl(NsImpl requested, const NsConfig& ns) {
  if (requested == NsImpl::automatic) return ns.variant == NsVariant::gram ? NsImpl::gram : NsImpl::standard;
  if (requested == NsImpl::symmetric_sm90 || requested == NsImpl::symmetric_lt) return NsImpl::symmetric;
  if (requested == NsImpl::gram_sm90) return NsImpl::gram_symmetric;
  return requested;
}

NsOutcome NsEngine::run_sharded(const NsShardCall& call, const NsConfig& ns, NsImpl impl, const NsShardReduce& reduce) {
  NsCall as_call;  // the member's block as a call, for the shared argument checks and messages
  as_call.rows = call.m;
  as_call.cols = call.columns;
  as_call.in_dtype = call.in_dtype;
  as_call.in = call.in;
  as_call.out = call.out;
  as_call.names = {call.name};
  validate_call(as_call, ns);
  if (!reduce.norm || !reduce.gram) throw Error("NsEngine::run_sharded: '" + call.name + "': no all-reduce given");
  State& st = *state_;
  impl = sharded_impl(impl, ns);
  // Set by hand: geometry_of would swap m and n when this member holds fewer columns than m.
  NsGeometry g;
  g.m = call.m;
  g.n = call.columns;
  g.x_column_major = call.column_major;
  if (call.product_members > 1) {
    if (!reduce.gather) throw Error("NsEngine::run_sharded: '" + call.name + "': split products need an all-gather");
    if (call.position < 0 || call.position >= call.product_members || !ns_shardable(call.m, call.product_members)) {
      throw Error("NsEngine::run_sharded: '" + call.name + "': member " + std::to_string(call.position) + " of " +
                  std::to_string(call.product_members) + " splitting " + std::to_string(call.m) + " product columns");
    }
    g.product_blocks = call.product_members;
    g.product_block = call.position;
  }
  // Every implementation sharded_impl returns runs on every shape (no availability check that
  // could differ between members of different widths).
  const NsBuffers buf = st.buffers(g, ns.compute_dtype, true);
  enqueue_sharded_ns(st.gemm, st.stream, impl, g, buf, call.in, call.in_dtype, call.out, ns, reduce);
  NsOutcome outcome;
  outcome.impl = impl;
  return st.checked(outcome, buf, as_call, ns);
}

NsOutcome NsEngine::State::checked(NsOutcome outcome, const NsBuffers& buf, const NsCall& call, const NsConfig& ns) {
  State& st = *this;
  if (!st.options.check_finite) return outcome;
  st.ensure_status_capacity(call.batch);
  DMUON_CUDA_CHECK(cudaMemcpyAsync(st.status_host, buf.status, sizeof(int) * call.batch, cudaMemcpyDeviceToHost,
                                   st.stream));
  DMUON_CUDA_CHECK(cudaStreamSynchronize(st.stream));
  std::string bad, overflowed;
  for (int i = 0; i < call.batch; ++i) {
    if (st.status_host[i] == kNormOverflow) overflowed += (overflowed.empty() ? "" : ", ") + matrix_name(call, i);
    if (st.status_host[i] != kNormNonFinite) continue;
    outcome.skipped.push_back(i);
    bad += (bad.empty() ? "" : ", ") + matrix_name(call, i);
  }
  if (!bad.empty() && st.options.non_finite == NonfinitePolicy::error) {
    throw Error("Newton-Schulz input has NaN or Inf values: " + bad);
  }
  // Always an error, as in the reference: a finite gradient the config cannot normalise is a
  // configuration problem, not a bad step to skip.
  if (!overflowed.empty()) {
    throw Error("Newton-Schulz: the Frobenius norm of the input overflows normalize_dtype " +
                std::string(to_string(ns.normalize_dtype)) + "; use a wider normalize_dtype: " + overflowed);
  }
  return outcome;
}

std::size_t NsEngine::workspace_bytes() const { return state_->arena_bytes + state_->gemm.workspace_bytes(); }

void NsEngine::release_workspace() {
  State& st = *state_;
  DMUON_CUDA_CHECK(cudaStreamSynchronize(st.stream));
  st.drop_graphs();
  device_free(st.arena);
  st.arena = nullptr;
  st.arena_bytes = 0;
}

const std::string& NsEngine::gpu_name() const { return state_->gpu; }
Stream NsEngine::stream() const { return state_->stream; }

std::string tune_key(long rows, long cols, int batch, const NsConfig& ns) {
  // Orientation matters (operand order differs), so rows and cols are kept as given.
  return std::to_string(rows) + "x" + std::to_string(cols) + "|b" + std::to_string(batch) + "|" +
         config_fingerprint(ns);
}

}  // namespace dmuon::cuda
