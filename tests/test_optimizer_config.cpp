// Presets carry the published defaults, schedules the published coefficients, and invalid
// values are rejected with the field named.
#include <cmath>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/optimizer/optimizer_config.hpp"

using namespace dmuon;

TEST_CASE("torch preset equals torch.optim.Muon defaults", "[optimizer]") {
  const auto c = optimizer_preset("torch");
  CHECK(c.muon.lr == 1e-3);
  CHECK(c.muon.weight_decay == 0.1);
  CHECK(c.muon.momentum == 0.95);
  CHECK(c.muon.nesterov);
  CHECK(c.muon.momentum_form == MomentumForm::ema);
  CHECK(c.muon.adjust_lr == AdjustLr::original);
  CHECK(c.muon.ns.variant == NsVariant::standard);
  CHECK(c.muon.ns.steps == 5);
  CHECK(c.muon.ns.eps == 1e-7);
  CHECK(c.muon.ns.norm_mode == NormMode::clamp);
  CHECK(c.muon.ns.compute_dtype == DType::bf16);
  CHECK(c.muon.ns.coefficient(4).a == 3.4445);
  CHECK(c.adamw.beta2 == 0.999);
  CHECK(c.adamw.weight_decay == 0.01);
  CHECK_NOTHROW(c.validate());
}

TEST_CASE("dmuon and moonlight presets", "[optimizer]") {
  const auto d = optimizer_preset("dmuon");
  CHECK(d.muon.momentum_form == MomentumForm::sum);
  CHECK(d.muon.adjust_lr == AdjustLr::match_rms_adamw);
  CHECK(d.muon.ns.variant == NsVariant::gram);
  CHECK(d.muon.ns.compute_dtype == DType::fp16);
  CHECK(d.muon.ns.normalize_dtype == DType::fp32);
  CHECK(d.muon.ns.restarts == std::vector<int>{2});
  CHECK(d.muon.lr == 0.02);
  // Polar Express /1.05, computed: research notes give (7.8925828744, -20.3830139459, 13.5553061494).
  CHECK(d.muon.ns.coefficient(0).a == Approx(7.8925828744).epsilon(1e-10));
  CHECK(d.muon.ns.coefficient(0).b == Approx(-20.3830139459).epsilon(1e-10));
  CHECK(d.muon.ns.coefficient(0).c == Approx(13.5553061494).epsilon(1e-10));
  CHECK(d.muon.ns.coefficient(4).a == Approx(2.1910971619).epsilon(1e-10));
  const auto m = optimizer_preset("moonlight");
  CHECK(m.muon.momentum_form == MomentumForm::sum);
  CHECK(m.muon.ns.norm_mode == NormMode::add);
  CHECK(m.adamw.beta2 == 0.95);
  CHECK_THROWS_WITH(optimizer_preset("lion"), Catch::Contains("unknown preset 'lion'"));
}

TEST_CASE("schedules: lengths, repeat-last and the 1.01 variant", "[optimizer]") {
  CHECK(named_schedule("you", "x").size() == 5);
  CHECK(named_schedule("you", "x")[3].c == 1.2046);
  const auto pe101 = named_schedule("polar-express-1.01", "x");
  REQUIRE(pe101.size() == 8);
  CHECK(pe101[0].a == Approx(8.2051).epsilon(1e-4));
  CHECK(pe101[0].b == Approx(-22.9019).epsilon(1e-4));
  CHECK(pe101[7].a == 1.875);  // steady state kept unscaled
  CHECK(coefficient_at(pe101, 20).c == 0.375);
  CHECK(default_steps("polar-express-1.01") == 8);
  CHECK(default_steps("keller") == 5);
  // The composed polynomial maps well-conditioned singular values near 1 (PE is designed so).
  NsConfig ns;
  ns.schedule = named_schedule("polar-express", "x");
  ns.steps = 5;
  CHECK(std::abs(ns.compose(0.3) - 1.0) < 0.1);
  CHECK(ns.compose(0.0) == 0.0);
}

TEST_CASE("validate rejects invalid values naming the field", "[optimizer]") {
  auto c = optimizer_preset("torch");
  c.muon.lr = -1;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("optimizer.lr"));
  c = optimizer_preset("torch");
  c.muon.ns.steps = 0;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("optimizer.ns.steps"));
  c.muon.ns.steps = 100;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("optimizer.ns.steps"));
  c = optimizer_preset("torch");
  c.adamw.beta2 = 1.0;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("optimizer.adamw.betas"));
  c = optimizer_preset("dmuon");
  c.muon.ns.restarts = {3, 2};
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("strictly increasing"));
  c = optimizer_preset("torch");
  c.muon.master_dtype = DType::bf16;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("optimizer.master_dtype"));
}

TEST_CASE("adjusted lr follows the three rules", "[optimizer]") {
  auto c = optimizer_preset("torch").muon;
  c.lr = 0.02;
  CHECK(adjusted_lr(c, 4096, 1024) == Approx(0.02 * 2.0));
  CHECK(adjusted_lr(c, 1024, 4096) == Approx(0.02));
  c.adjust_lr = AdjustLr::match_rms_adamw;
  CHECK(adjusted_lr(c, 1024, 4096) == Approx(0.02 * 0.2 * 64.0));
  c.adjust_lr = AdjustLr::none;
  CHECK(adjusted_lr(c, 1024, 4096) == 0.02);
}
