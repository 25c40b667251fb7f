#include "harness/verify/builtin_suite.hpp"

#include "core/optimizer/optimizer_config.hpp"
#include "harness/verify/ns_checks.hpp"
#include "harness/verify/step_checks.hpp"

namespace dmuon::verify {

std::vector<VerifyCase> builtin_cases(const SuiteOptions& options) {
  std::vector<NsShape> shapes = {
      {"square-64x64", 64, 64, InputKind::gaussian},
      {"tall-96x48", 96, 48, InputKind::gaussian},
      {"wide-48x96", 48, 96, InputKind::gaussian},
      {"row-1x37", 1, 37, InputKind::gaussian},
      {"column-29x1", 29, 1, InputKind::gaussian},
      {"primes-37x53", 37, 53, InputKind::gaussian},
      {"ill-conditioned-80x120", 80, 120, InputKind::ill_conditioned},
      // 4096x11008 scaled by 1/8: the same aspect ratio (an MLP projection) at CI cost.
      {"mlp-class-512x1376", 512, 1376, InputKind::gaussian},
  };
  std::vector<VerifyCase> cases;
  std::uint64_t seed = options.seed;
  for (const auto& shape : shapes) {
    for (const auto& preset : preset_names()) {
      const std::uint64_t s = seed++;
      cases.push_back({"ns/" + shape.label + "/" + preset, [=] { return run_ns_group(shape, preset, s); }});
    }
  }
  if (options.full) {
    // The real shape, for the DMuon preset only: one group is ~8 double-precision NS runs of
    // 4.4 TFLOP each plus an SVD, tens of minutes on 2 cores.
    const NsShape real{"mlp-4096x11008", 4096, 11008, InputKind::gaussian};
    const std::uint64_t s = seed++;
    cases.push_back({"ns/" + real.label + "/dmuon", [=] { return run_ns_group(real, "dmuon", s); }});
  }
  for (const auto& preset : preset_names()) {
    cases.push_back({"muon/" + preset, [=] { return run_muon_closed_forms(preset); }});
    cases.push_back({"adamw/" + preset, [=] { return run_adamw_closed_forms(preset); }});
  }
  return cases;
}

}  // namespace dmuon::verify
