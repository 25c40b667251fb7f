// core/optimizer/ns_rounding: the rounding allowances equal the numbers their derivation states, and move
// the way the analysis says (with the unit roundoff, the condition number, the stores).
#include "catch_compat.hpp"
#include "core/optimizer/ns_rounding.hpp"
#include "core/optimizer/optimizer_config.hpp"

using namespace dmuon;

namespace {

constexpr double kFp16 = 0x1.0p-11;

NsConfig preset_ns(const char* preset) { return optimizer_preset(preset).muon.ns; }

}  // namespace

TEST_CASE("allowances are the derivation's numbers", "[ns][tolerance]") {
  // Standard, Keller x5, fused: u sqrt(3 * 16) = 6.93u at kappa 1, +2.91u per octave.
  const NsConfig torch = preset_ns("torch");
  CHECK(ns_rounding_tolerance(torch, 1.0) / 0x1.0p-8 == Approx(6.928).epsilon(1e-3));
  CHECK((ns_rounding_tolerance(torch, 1024.0) - ns_rounding_tolerance(torch, 1.0)) / 0x1.0p-8 ==
        Approx(10 * 2.913).epsilon(1e-3));
  // DMuon's Gram: u (sqrt(3 * 21) + 15.1 + 16.1) = 39.1u at kappa 1, +7.2u per octave.
  const NsConfig gram = preset_ns("dmuon");
  CHECK(ns_rounding_tolerance(gram, 1.0) / kFp16 == Approx(39.1).epsilon(3e-3));
  CHECK((ns_rounding_tolerance(gram, 2.0) - ns_rounding_tolerance(gram, 1.0)) / kFp16 == Approx(7.18).epsilon(3e-3));
}

TEST_CASE("allowances scale with the unit roundoff and grow with stores and conditioning", "[ns][tolerance]") {
  NsConfig ns = preset_ns("dmuon");
  NsConfig bf16 = ns;
  bf16.compute_dtype = DType::bf16;
  CHECK(ns_rounding_tolerance(bf16, 10.0) == Approx(8 * ns_rounding_tolerance(ns, 10.0)));
  CHECK(ns_rounding_tolerance(ns, 100.0) > ns_rounding_tolerance(ns, 10.0));
  NsConfig standard = ns;
  standard.variant = NsVariant::standard;
  standard.restarts.clear();
  NsConfig separate = standard;
  separate.products = NsProducts::separate;
  CHECK(ns_rounding_tolerance(separate, 1.0) > ns_rounding_tolerance(standard, 1.0));
  CHECK(ns_rounding_tolerance(ns, 1.0) > ns_rounding_tolerance(standard, 1.0));
}
