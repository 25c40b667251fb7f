#include "kernels/exec/session.hpp"

#include "core/error.hpp"
#include "kernels/exec/nccl_executor.hpp"

namespace dmuon::exec {
namespace {

// Uploads values[p][r.lo, r.hi) into every allocated range of `kind`.
void upload_all(DeviceBuffers& b, int kind, const std::vector<std::vector<double>>& values) {
  if (values.size() != b.params()) {
    throw Error("session: " + std::to_string(values.size()) + " buffers for " + std::to_string(b.params()) + " parameters");
  }
  for (std::size_t p = 0; p < b.params(); ++p) {
    const Range& r = b.range(p, kind);
    if (r.empty()) continue;
    if (static_cast<std::int64_t>(values[p].size()) < r.hi) {
      throw Error("session: parameter " + std::to_string(p) + " has " + std::to_string(values[p].size()) + " values, the plan uses " +
                  std::to_string(r.hi));
    }
    b.upload(kind, {p, r.lo, r.hi - r.lo},
             std::vector<double>(values[p].begin() + r.lo, values[p].begin() + r.hi));
  }
}

}  // namespace

PlanSession::PlanSession(RankHandle& rank, const Plan& plan, const ModelSpec& model, const Routing& routing,
                         const OptimizerConfig& config, const SessionOptions& options)
    : plan_(plan), rank_(rank.rank()) {
  ExecutorOptions eo;
  eo.timeout_seconds = options.timeout_seconds;
  eo.compute.ns_impl = cuda::parse_ns_impl(options.ns_impl, "ns_impl");
  executor_ = std::make_unique<RankExecutor>(rank.comms(), plan, model, routing, config, eo, rank.peer_failed());
}

PlanSession::~PlanSession() = default;

void PlanSession::set_params(const std::vector<std::vector<double>>& params) {
  upload_all(executor_->buffers(), kMasterKind, params);
  upload_all(executor_->buffers(), static_cast<int>(BufferKind::param), params);
}

void PlanSession::step(const std::vector<std::vector<double>>& local_grads) {
  ++steps_;
  executor_->run(kForward, steps_);
  upload_all(executor_->buffers(), static_cast<int>(BufferKind::grad), local_grads);
  executor_->run(kBackward | kOptimizer, steps_);
}

std::vector<UpdatedRegion> PlanSession::updated_masters() const {
  std::vector<UpdatedRegion> out;
  for (const Op& op : plan_.ranks.at(static_cast<std::size_t>(rank_))) {
    if (op.kind != OpKind::muon_update && op.kind != OpKind::adamw) continue;
    for (const Region& r : op.regions) {
      if (r.count > 0) out.push_back({r, executor_->buffers().download(kMasterKind, r)});
    }
  }
  return out;
}

}  // namespace dmuon::exec
