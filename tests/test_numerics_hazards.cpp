// Numerics hazards against the reference path (muon_step, newton_schulz, adamw_step, ModelStep
// and the plan interpreter): NaN/Inf gradients under both `nonfinite` policies, all-zero
// gradients, subnormal and huge magnitudes, 1xn and nx1 matrices, and a matrix larger than a
// GPU's memory, refused up front with the bytes it needs. reports/reliability.md lists them.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <Eigen/SVD>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/model/model_yaml.hpp"
#include "core/optimizer/optimizer_yaml.hpp"
#include "core/plan/plan_builders.hpp"
#include "core/model/routing.hpp"
#include "core/plan/step_planner.hpp"
#include "error_message.hpp"
#include "reference/model_step.hpp"
#include "reference/plan_interpreter.hpp"

using namespace dmuon;
using dmuon::test::error_of;
using ref::Rounding;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Eigen::MatrixXd gaussian(long rows, long cols, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::MatrixXd m(rows, cols);
  for (long i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

bool bitwise_equal(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && (a.array() == b.array()).all();
}

// Scaled norms: the magnitudes here reach 1e-300 and 1e300.
double rel(const Eigen::MatrixXd& got, const Eigen::MatrixXd& want) {
  return (got - want).stableNorm() / want.stableNorm();
}

OptimizerConfig with_policy(const std::string& preset, NonfinitePolicy policy) {
  OptimizerConfig c = optimizer_preset(preset);
  c.muon.nonfinite = c.adamw.nonfinite = policy;
  c.muon.weight_decay = 0.1;  // so that a skipped step is visible even with a zero update
  return c;
}

}  // namespace

TEST_CASE("nonfinite: error|skip is one validated YAML knob, error by default", "[numerics]") {
  const auto parse = [](const std::string& text) { return parse_optimizer(YamlValue::load_string(text, "o.yaml")); };
  CHECK(parse("preset: torch").muon.nonfinite == NonfinitePolicy::error);
  CHECK(parse("preset: dmuon").adamw.nonfinite == NonfinitePolicy::error);
  const auto skip = parse("nonfinite: skip");
  CHECK(skip.muon.nonfinite == NonfinitePolicy::skip);
  CHECK(skip.adamw.nonfinite == NonfinitePolicy::skip);
  const auto mixed = parse("nonfinite: skip\nadamw: {nonfinite: error}");
  CHECK(mixed.muon.nonfinite == NonfinitePolicy::skip);
  CHECK(mixed.adamw.nonfinite == NonfinitePolicy::error);
  CHECK(error_of([&] { parse("nonfinite: ignore"); }) == "o.yaml:1: nonfinite: expected error or skip, got 'ignore'");
}

TEST_CASE("a NaN or Inf gradient: error names the matrix and element and writes nothing", "[numerics]") {
  for (const std::string preset : {"torch", "moonlight", "dmuon"}) {
    for (const Rounding rounding : {Rounding::exact, Rounding::emulate}) {
      for (const double bad : {kNaN, kInf, -kInf}) {
        INFO(preset << " rounding " << int(rounding) << " value " << bad);
        const auto cfg = with_policy(preset, NonfinitePolicy::error);
        Eigen::MatrixXd W = gaussian(6, 9, 1), G = gaussian(6, 9, 2);
        ref::MuonState muon;
        ref::muon_step(W, G, muon, cfg.muon, rounding, "blk.0.w");  // a finite first step
        const Eigen::MatrixXd W1 = W, M1 = muon.momentum;
        G(4, 7) = bad;
        const std::string message = error_of([&] { ref::muon_step(W, G, muon, cfg.muon, rounding, "blk.0.w"); });
        CHECK(message == "muon_step: gradient of 'blk.0.w' has " +
                             std::string(std::isnan(bad) ? "nan" : bad > 0 ? "inf" : "-inf") + " at [4, 7]");
        CHECK(bitwise_equal(W, W1));
        CHECK(bitwise_equal(muon.momentum, M1));
        CHECK(muon.step == 1);

        Eigen::MatrixXd V = gaussian(3, 5, 3);
        const Eigen::MatrixXd V0 = V;
        ref::AdamWState adam;
        Eigen::MatrixXd g = gaussian(3, 5, 4);
        g(2, 1) = bad;
        CHECK_THAT(error_of([&] { ref::adamw_step(V, g, adam, cfg.adamw, rounding, "norm.weight"); }),
                   Catch::Contains("adamw_step: gradient of 'norm.weight' has"));
        CHECK_THAT(error_of([&] { ref::adamw_step(V, g, adam, cfg.adamw, rounding, "norm.weight"); }),
                   Catch::Contains("at [2, 1]"));
        CHECK(bitwise_equal(V, V0));
        CHECK(adam.step == 0);
      }
    }
  }
}

TEST_CASE("a NaN gradient under skip: that step never happened for that matrix", "[numerics]") {
  for (const std::string preset : {"torch", "moonlight", "dmuon"}) {
    for (const Rounding rounding : {Rounding::exact, Rounding::emulate}) {
      INFO(preset << " rounding " << int(rounding));
      const auto cfg = with_policy(preset, NonfinitePolicy::skip);
      const Eigen::MatrixXd W0 = gaussian(5, 8, 5), G1 = gaussian(5, 8, 6), G2 = gaussian(5, 8, 7);
      Eigen::MatrixXd bad = G1;
      bad(0, 0) = kNaN;
      // Skipped step, then G1, G2 ...
      Eigen::MatrixXd W = W0;
      ref::MuonState s;
      ref::muon_step(W, bad, s, cfg.muon, rounding);
      CHECK(bitwise_equal(W, W0));
      CHECK(s.step == 0);
      ref::muon_step(W, G1, s, cfg.muon, rounding);
      ref::muon_step(W, G2, s, cfg.muon, rounding);
      // ... equals G1, G2 alone, bit for bit.
      Eigen::MatrixXd want = W0;
      ref::MuonState t;
      ref::muon_step(want, G1, t, cfg.muon, rounding);
      ref::muon_step(want, G2, t, cfg.muon, rounding);
      CHECK(bitwise_equal(W, want));
      CHECK(bitwise_equal(s.momentum, t.momentum));

      // AdamW: the bias-correction step t does not advance on a skipped step.
      Eigen::MatrixXd V = W0, V_want = W0;
      ref::AdamWState a, b;
      ref::adamw_step(V, G1, a, cfg.adamw, rounding);
      Eigen::MatrixXd inf_grad = G2;
      inf_grad(3, 3) = -kInf;
      ref::adamw_step(V, inf_grad, a, cfg.adamw, rounding);
      ref::adamw_step(V, G2, a, cfg.adamw, rounding);
      ref::adamw_step(V_want, G1, b, cfg.adamw, rounding);
      ref::adamw_step(V_want, G2, b, cfg.adamw, rounding);
      CHECK(a.step == 2);
      CHECK(bitwise_equal(V, V_want));
      CHECK(V.allFinite());
    }
  }
}

TEST_CASE("an all-zero gradient gives a zero update: no 0/0 anywhere", "[numerics]") {
  for (const std::string preset : {"torch", "moonlight", "dmuon"}) {
    for (const Rounding rounding : {Rounding::exact, Rounding::emulate}) {
      INFO(preset << " rounding " << int(rounding));
      OptimizerConfig cfg = optimizer_preset(preset);
      cfg.muon.weight_decay = 0;
      cfg.adamw.weight_decay = 0;
      // Weights exactly representable in fp32, so emulated storage rounding keeps them.
      const Eigen::MatrixXd W0 = gaussian(7, 4, 8).cast<float>().cast<double>();
      const Eigen::MatrixXd zero = Eigen::MatrixXd::Zero(7, 4);
      CHECK(ref::newton_schulz(zero, cfg.muon.ns, rounding).isZero(0));
      Eigen::MatrixXd W = W0;
      ref::MuonState s;
      for (int k = 0; k < 3; ++k) ref::muon_step(W, zero, s, cfg.muon, rounding);
      CHECK(bitwise_equal(W, W0));
      CHECK(s.momentum.isZero(0));
      Eigen::MatrixXd V = W0;
      ref::AdamWState a;
      for (int k = 0; k < 3; ++k) ref::adamw_step(V, zero, a, cfg.adamw, rounding);
      CHECK(bitwise_equal(V, W0));
      CHECK(a.exp_avg_sq.isZero(0));
    }
  }
}

TEST_CASE("Newton-Schulz is scale-free from subnormal to huge gradients", "[numerics]") {
  // Exact NS of c*G equals U p(s_i/N) V^T for every scale c: the sum of squares of the norm
  // would overflow above ~1e154 (a zero output: a skipped update) and underflow below ~1e-162
  // (an unnormalised output); the reference must not do either.
  for (const std::string preset : {"torch", "moonlight", "dmuon"}) {
    const NsConfig ns = optimizer_preset(preset).muon.ns;
    const Eigen::MatrixXd G = gaussian(6, 10, 9);
    const Eigen::BDCSVD<Eigen::MatrixXd> svd(G, Eigen::ComputeThinU | Eigen::ComputeThinV);
    for (const double scale : {1e-300, 1e-170, 1e-150, 1.0, 1e150, 1e200, 1e300}) {
      INFO(preset << " scale " << scale);
      const Eigen::MatrixXd X = G * scale;
      const Eigen::MatrixXd got = ref::newton_schulz(X, ns, Rounding::exact);
      REQUIRE(got.allFinite());
      // The prediction, from the SVD of the unscaled G with the normaliser of the scaled one.
      const double normaliser = ref::ns_normaliser(G.stableNorm() * scale, ns);
      const Eigen::VectorXd mapped =
          svd.singularValues().unaryExpr([&](double s) { return ns.compose(s * (scale / normaliser)); });
      const Eigen::MatrixXd want = svd.matrixU() * mapped.asDiagonal() * svd.matrixV().transpose();
      CHECK(rel(got, want) < 1e-9);
    }
    // Far above the eps floor the output does not depend on the scale at all.
    CHECK(rel(ref::newton_schulz(G * 1e300, ns, Rounding::exact), ref::newton_schulz(G * 1e100, ns, Rounding::exact)) <
          1e-12);
  }
}

TEST_CASE("subnormal gradients give a finite, negligible update", "[numerics]") {
  for (const std::string preset : {"torch", "moonlight", "dmuon"}) {
    for (const Rounding rounding : {Rounding::exact, Rounding::emulate}) {
      INFO(preset << " rounding " << int(rounding));
      const auto cfg = optimizer_preset(preset);
      const Eigen::MatrixXd W0 = gaussian(4, 6, 10);
      const Eigen::MatrixXd G = gaussian(4, 6, 11) * 1e-310;  // every entry subnormal
      Eigen::MatrixXd W = W0, V = W0;
      ref::MuonState s;
      ref::AdamWState a;
      ref::muon_step(W, G, s, cfg.muon, rounding);
      ref::adamw_step(V, G, a, cfg.adamw, rounding);
      REQUIRE(W.allFinite());
      REQUIRE(V.allFinite());
      // Muon: below eps the normalisation divides by eps, so the update is ~1e-300 of lr.
      const Eigen::MatrixXd decayed = W0 * (1 - cfg.muon.lr * cfg.muon.weight_decay);
      CHECK((W - decayed).cwiseAbs().maxCoeff() <= (rounding == Rounding::exact ? 1e-290 : 1e-6));
      CHECK(s.momentum.allFinite());
      CHECK(a.exp_avg_sq.allFinite());
    }
  }
}

TEST_CASE("huge gradients: Muon is unaffected, overflow of AdamW or momentum state is an error", "[numerics]") {
  const Eigen::MatrixXd W0 = gaussian(5, 7, 12), G = gaussian(5, 7, 13);
  for (const std::string preset : {"torch", "moonlight", "dmuon"}) {
    INFO(preset);
    const auto cfg = optimizer_preset(preset);
    // Exact: 1e200 * G updates W as 1e100 * G does (scale invariance; eps is negligible at both
    // scales). A plain sum of squares would make the first a zero update.
    Eigen::MatrixXd W = W0, W_ref = W0;
    ref::MuonState s, t;
    ref::muon_step(W, G * 1e200, s, cfg.muon, Rounding::exact, "big");
    ref::muon_step(W_ref, G * 1e100, t, cfg.muon, Rounding::exact, "big");
    REQUIRE(rel(W_ref, W0) > 1e-4);
    CHECK(rel(W - W0, W_ref - W0) < 1e-12);
    // exp_avg_sq = (1 - b2) g^2 overflows double above ~1e155: an error, W untouched.
    Eigen::MatrixXd V = W0;
    ref::AdamWState a;
    CHECK(error_of([&] { ref::adamw_step(V, G * 1e200, a, cfg.adamw, Rounding::exact, "emb"); }) ==
          "adamw_step: exp_avg_sq of 'emb' has inf at [0, 0]");
    CHECK(bitwise_equal(V, W0));
    // With fp32 master state (emulated, as on the GPU), from ~6e20 on.
    CHECK_THAT(error_of([&] { ref::adamw_step(V, G * 1e25, a, cfg.adamw, Rounding::emulate, "emb"); }),
               Catch::Contains("adamw_step: exp_avg_sq of 'emb' has inf"));
    CHECK(a.step == 0);
  }
  // Sum-form momentum (moonlight, dmuon) grows to g / (1 - mu): 1e308 overflows it.
  const auto cfg = optimizer_preset("dmuon");
  Eigen::MatrixXd W = W0;
  ref::MuonState s;
  const Eigen::MatrixXd huge = Eigen::MatrixXd::Constant(5, 7, 1e308);
  CHECK_THAT(error_of([&] { ref::muon_step(W, huge, s, cfg.muon, Rounding::exact, "mlp.w"); }),
             Catch::Contains("muon_step: Newton-Schulz input of 'mlp.w' has inf"));
  CHECK(bitwise_equal(W, W0));
  CHECK(s.step == 0);
  // An fp16 normalisation cannot hold a norm above 65504: refused, not a silent zero update.
  OptimizerConfig fp16 = optimizer_preset("torch");
  fp16.muon.ns.normalize_dtype = DType::fp16;
  CHECK_THAT(error_of([&] { ref::muon_step(W, G * 1e7, s, fp16.muon, Rounding::emulate, "mlp.w"); }),
             Catch::Contains("overflows normalize_dtype fp16; use a wider normalize_dtype (muon_step of 'mlp.w')"));
  CHECK(bitwise_equal(W, W0));
}

TEST_CASE("1xn and nx1 matrices: NS is v/|v| mapped by the polynomial, both orientations", "[numerics]") {
  for (const std::string preset : {"torch", "moonlight", "dmuon"}) {
    const NsConfig ns = optimizer_preset(preset).muon.ns;
    const Eigen::MatrixXd row = gaussian(1, 9, 14);
    // One singular value |v|: the output is p(|v| / N) v / |v|.
    const double p = ns.compose(row.norm() / ref::ns_normaliser(row.norm(), ns));
    const Eigen::MatrixXd want = p * row / row.norm();
    for (const Rounding rounding : {Rounding::exact, Rounding::emulate}) {
      INFO(preset << " rounding " << int(rounding));
      const double tol = rounding == Rounding::exact ? 1e-12 : 0.05;
      const Eigen::MatrixXd out_row = ref::newton_schulz(row, ns, rounding);
      const Eigen::MatrixXd out_col = ref::newton_schulz(row.transpose(), ns, rounding);
      CHECK(rel(out_row, want) < tol);
      CHECK(bitwise_equal(out_col, out_row.transpose()));
      // A 1x1 matrix too.
      const Eigen::MatrixXd one = Eigen::MatrixXd::Constant(1, 1, -3.0);
      CHECK(std::abs(ref::newton_schulz(one, ns, rounding)(0, 0) + ns.compose(3.0 / ref::ns_normaliser(3.0, ns))) <
            tol);
    }
  }
}

TEST_CASE("the plan interpreter: 1xn/nx1 matrices and a NaN gradient under both policies, every strategy",
          "[numerics]") {
  const char* text = R"(name: vectors
params:
  - {name: row.weight, shape: [1, 12], role: matrix, layer: 0}
  - {name: col.weight, shape: [12, 1], role: matrix, layer: 0}
  - {name: sq.weight, shape: [6, 6], role: matrix, layer: 1}
  - {name: norm.weight, shape: [6]}
)";
  const ModelSpec model = parse_model(YamlValue::load_string(text, "vectors.yaml"));
  const Routing routing = route_parameters(model, {});
  REQUIRE(routing.muon_matrices.size() == 3);
  const Mesh mesh{1, 2};
  std::vector<Eigen::VectorXd> initial;
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    initial.push_back(Eigen::VectorXd(gaussian(model.params[p].numel(), 1, 20 + unsigned(p))));
  }
  const auto grads = [&](unsigned seed) {
    std::vector<std::vector<Eigen::VectorXd>> out(2);
    for (int r = 0; r < 2; ++r) {
      for (std::size_t p = 0; p < model.params.size(); ++p) {
        out[r].push_back(Eigen::VectorXd(gaussian(model.params[p].numel(), 1, seed * 100 + 10 * r + unsigned(p))));
      }
    }
    return out;
  };
  for (const Strategy strategy : all_strategies()) {
    for (const NonfinitePolicy policy : {NonfinitePolicy::error, NonfinitePolicy::skip}) {
      INFO(to_string(strategy) << " policy " << to_string(policy));
      const auto config = with_policy("dmuon", policy);
      std::vector<int> owner;
      for (std::size_t m = 0; m < routing.muon_matrices.size(); ++m) owner.push_back(int(m % 2));
      const Plan plan = build_plan(strategy, model, routing, mesh, owner);
      ref::PlanInterpreter interpreter(plan, model, routing, config, Rounding::exact, initial);
      ref::ModelStep reference(model, routing, config, strategy == Strategy::adamw, initial, Rounding::exact);
      interpreter.step(grads(1));
      reference.step(grads(1));
      auto bad = grads(2);
      bad[1][1][5] = kNaN;  // rank 1's local gradient of col.weight
      bad[0][3][2] = kInf;  // rank 0's of norm.weight
      if (policy == NonfinitePolicy::error) {
        CHECK(error_of([&] { interpreter.step(bad); }) ==
              "interpreter: rank 1: gradient of 'col.weight' has nan at element 5");
        CHECK_THAT(error_of([&] { reference.step(bad); }), Catch::Contains("mean gradient of 'col.weight' has nan"));
        continue;
      }
      const auto before = interpreter.params_after_forward();
      interpreter.step(bad);
      reference.step(bad);
      const auto after_skip = interpreter.params_after_forward();
      for (int r = 0; r < 2; ++r) {
        CHECK((after_skip[r][1].array() == before[r][1].array()).all());  // col.weight skipped
        CHECK((after_skip[r][3].array() == before[r][3].array()).all());  // norm.weight skipped
        CHECK((after_skip[r][2].array() != before[r][2].array()).any());  // sq.weight stepped
      }
      interpreter.step(grads(3));
      reference.step(grads(3));
      const auto got = interpreter.params_after_forward();
      for (std::size_t p = 0; p < model.params.size(); ++p) {
        INFO(model.params[p].name);
        for (int r = 0; r < 2; ++r) {
          REQUIRE(got[r][p].allFinite());
          CHECK((got[r][p] - reference.params()[p]).norm() <= 1e-12 * reference.params()[p].norm());
        }
      }
    }
  }
}

TEST_CASE("a matrix larger than a GPU's memory is refused up front with the bytes it needs", "[numerics]") {
  const char* text = R"(name: huge
params:
  - {name: small.weight, shape: [64, 64], layer: 0}
  - {name: huge.weight, shape: [100000, 100000], layer: 1}
)";
  const ModelSpec model = parse_model(YamlValue::load_string(text, "huge.yaml"));
  const Routing routing = route_parameters(model, {});
  const CostModel cost(device_profile("h100-sxm"));
  StepPlanOptions options;
  options.owner_memory_capacity_bytes = 80.0 * 1024 * 1024 * 1024;  // an 80 GiB GPU
  // bf16 param + fp32 momentum + fp32 master: 10 bytes an element, 1e11 bytes.
  CHECK(error_of([&] {
          plan_step(model, routing, optimizer_preset("dmuon"), Strategy::dedicated, Mesh{1, 8}, cost, options);
        }) == "owner assignment: matrix 'huge.weight' needs 100000000000 bytes; the largest free rank memory is "
              "85899345920 bytes");
  // Each matrix fits, all of them together do not: memory runs out while placing, named too.
  options.owner_memory_capacity_bytes = 6e10;
  const char* two = R"(name: two
params:
  - {name: a.weight, shape: [70000, 70000], layer: 0}
  - {name: b.weight, shape: [70000, 70000], layer: 1}
)";
  const ModelSpec model2 = parse_model(YamlValue::load_string(two, "two.yaml"));
  CHECK_THAT(error_of([&] {
               plan_step(model2, route_parameters(model2, {}), optimizer_preset("dmuon"), Strategy::dedicated,
                         Mesh{1, 1}, cost, options);
             }),
             Catch::Contains("owner assignment: no rank has room for matrix '"));
}
