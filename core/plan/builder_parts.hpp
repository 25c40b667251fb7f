// Pieces the strategy builders share (plan_builders.cpp, owner_pipeline.cpp); internal to core.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/plan/plan.hpp"
#include "core/plan/plan_builders.hpp"
#include "core/plan/plan_writer.hpp"
#include "core/model/routing.hpp"

namespace dmuon {
namespace builder {

using Matrices = std::vector<std::size_t>;

Op elementwise(OpKind kind, const Region& region, const std::string& label);
// Muon matrices of each parameter, in order.
std::map<std::size_t, Matrices> matrices_by_param(const Routing& routing);
bool is_muon(const Routing& routing, std::size_t param);
// Splits `matrices` into same-shape batches of at most max_batch, in first-seen shape order.
std::vector<Matrices> batches_by_shape(const Routing& routing, const Matrices& matrices, int max_batch);
// One batched Newton-Schulz op of same-shape matrices.
Op newton_schulz(const Matrices& batch, const Routing& routing);

}  // namespace builder

// dedicated and owner-striped (owner_pipeline.cpp).
Plan build_owner_pipeline(PlanWriter& w, const std::vector<int>& owner, const PlanOptions& o);

}  // namespace dmuon
