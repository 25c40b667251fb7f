#include "harness/bench/calibrate_ns.hpp"

#include <algorithm>
#include <iostream>
#include <set>
#include <tuple>

#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/cost/ns_flops.hpp"
#include "core/model/routing.hpp"
#include "core/plan/step_planner.hpp"
#include "harness/bench/ns_timing.hpp"

namespace dmuon::bench {
namespace {

using FamilyKey = std::tuple<NsKernel, DType, int, std::vector<int>>;

FamilyKey family_key(const NsConfig& ns) { return {ns_kernel_of(ns), ns.compute_dtype, ns.steps, ns.restarts}; }

bool same_measurement(const NsMeasurement& a, const NsMeasurement& b) {
  return a.rows == b.rows && a.cols == b.cols && a.kernel == b.kernel && a.dtype == b.dtype && a.steps == b.steps &&
         a.restarts == b.restarts && a.batch == b.batch;
}

// Big calls are stable from a few replays and each costs tens of milliseconds or more; small
// ones need more replays for a stable median.
TimingOptions timing_for(double flops) {
  TimingOptions t;
  if (flops > 5e13) {
    t.warmup = 1;
    t.repeats = 3;
  } else if (flops > 2e12) {
    t.warmup = 2;
    t.repeats = 5;
  }
  return t;
}

}  // namespace

std::string NsCallShape::label() const {
  return std::to_string(rows) + "x" + std::to_string(cols) + " b" + std::to_string(batch);
}

std::vector<NsCallShape> scenario_ns_calls(const Scenario& sc, int max_batch) {
  const Routing routing = route_parameters(sc.model, sc.routing);
  const Mesh mesh = mesh_for_cluster(sc.cluster);
  const CostModel cost(device_profile(sc.cluster.gpu, "cluster.gpu"));
  StepPlanOptions po;
  po.plan.max_batch = max_batch;
  std::set<std::tuple<long, long, int>> seen;
  std::vector<NsCallShape> out;
  for (Strategy s : sc.strategies) {
    if (s == Strategy::adamw) continue;  // no Newton-Schulz
    StepPlan sp;
    try {
      sp = plan_step(sc.model, routing, sc.optimizer, s, mesh, cost, po);
    } catch (const Error& e) {
      throw Error(sc.file + ": planning " + std::string(to_string(s)) + ": " + e.what());
    }
    for (const auto& ops : sp.plan.ranks) {
      for (const Op& op : ops) {
        if (op.kind != OpKind::newton_schulz || op.matrices.empty()) continue;
        // The executor runs an op's matrices as one batched call of their (common) shape.
        const MuonMatrix& m = routing.muon_matrices.at(op.matrices.front());
        const NsCallShape call{static_cast<long>(m.rows), static_cast<long>(m.cols), static_cast<int>(op.matrices.size())};
        if (seen.insert({call.rows, call.cols, call.batch}).second) out.push_back(call);
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const NsCallShape& a, const NsCallShape& b) {
    return std::tie(a.rows, a.cols, a.batch) < std::tie(b.rows, b.cols, b.batch);
  });
  return out;
}

NsGrid parse_ns_grid(const std::string& name, const std::string& what) {
  if (name == "none") return NsGrid::none;
  if (name == "small") return NsGrid::small;
  if (name == "full") return NsGrid::full;
  throw Error(what + ": expected none, small or full, got '" + name + "'");
}

std::vector<NsCallShape> ns_grid_calls(NsGrid grid, long max_batch_elements) {
  if (max_batch_elements < 1) throw Error("ns_grid_calls: max_batch_elements must be >= 1");
  std::vector<NsCallShape> out;
  if (grid == NsGrid::none) return out;
  const bool full = grid == NsGrid::full;
  // Half-octave m from 1024 up: the efficiency is not smooth between octaves there. The
  // autotuned variant changes (on an H100, 3072^2 alone ran the standard program, 4096^2 the
  // triangle kernel) and tile waves quantise (3072 = 24 tiles of 128), so the octave grid of
  // stop 30 priced Llama-3.2-3B's lone 3072-class calls 12-13% fast (reports/sim-validation.md).
  const std::vector<long> ms = full ? std::vector<long>{128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192}
                                    : std::vector<long>{128, 256};
  const std::vector<long> ratios = full ? std::vector<long>{1, 2, 4, 8} : std::vector<long>{1, 2};
  const std::vector<int> batches = full ? std::vector<int>{4, 16, 64} : std::vector<int>{4};
  constexpr long kMaxCols = 32768;
  // Batches for every m, not only small ones: a Plan batches a model's same-shape matrices
  // (28-64 of them), and even 3072^2 ran 16% faster a matrix at batch 56 than alone on the
  // first H100 run. A batched call is bounded by `max_batch_elements` (memory and time); the
  // efficiency grid prices a larger batch at the largest one measured (NsEfficiencyGrid), so the
  // bound decides which batches a model's wide matrices are priced from.
  for (long m : ms) {
    for (long r : ratios) {
      if (m * r > kMaxCols) continue;
      out.push_back({m, m * r, 1});
      for (int b : batches) {
        if (m * m * r * b <= max_batch_elements) out.push_back({m, m * r, b});
      }
    }
  }
  return out;
}

std::vector<NsFamily> ns_families(const OptimizerConfig& scenario_optimizer) {
  std::vector<NsFamily> out{{"scenario (" + scenario_optimizer.preset + ")", scenario_optimizer.muon.ns}};
  for (const std::string preset : {"torch", "dmuon"}) {
    const NsConfig ns = optimizer_preset(preset).muon.ns;
    const bool listed = std::any_of(out.begin(), out.end(), [&](const NsFamily& f) { return family_key(f.ns) == family_key(ns); });
    if (!listed) out.push_back({preset, ns});
  }
  return out;
}

void time_ns_calls(cuda::NsEngine& engine, const NsFamily& family, const std::vector<NsCallShape>& calls,
                   const std::string& what, std::vector<NsMeasurement>& out) {
  const NsConfig& ns = family.ns;
  for (const NsCallShape& call : calls) {
    NsMeasurement m;
    m.rows = std::min(call.rows, call.cols);
    m.cols = std::max(call.rows, call.cols);
    m.kernel = ns_kernel_of(ns);  // what the cost model is asked, whichever implementation won
    m.dtype = ns.compute_dtype;
    m.steps = ns.steps;
    m.restarts = ns.restarts;
    m.batch = call.batch;
    if (std::any_of(out.begin(), out.end(), [&](const NsMeasurement& o) { return same_measurement(o, m); })) continue;
    const double flops = ns_useful_flops(call.rows, call.cols, ns.steps) * call.batch;
    TimingOptions t = timing_for(flops);
    t.in_dtype = ns.compute_dtype;  // the executor hands the engine its NS input buffer, in the compute dtype
    BenchShape shape;
    shape.rows = call.rows;
    shape.cols = call.cols;
    const NsBenchRow row = time_ns(engine, shape, call.batch, family.label, ns, t, false);
    engine.release_workspace();  // the next call allocates its own: peak memory stays one call's
    if (!(row.chosen_seconds > 0)) {
      throw Error("Newton-Schulz " + call.label() + " (" + family.label + "): no time measured for " +
                  std::string(cuda::to_string(row.chosen)));
    }
    m.seconds = row.chosen_seconds;
    out.push_back(m);
    std::cerr << "  ns " << what << " " << family.label << " " << call.label() << ": " << cuda::to_string(row.chosen) << " "
              << m.seconds * 1e3 << " ms, " << row.useful_tflops << " useful TFLOP/s" << std::endl;
  }
}

}  // namespace dmuon::bench
