// libFuzzer target: the calibration loader (core/cost/calibration.hpp parse_calibration). Whatever
// it accepts must survive calibration_to_yaml -> parse_calibration unchanged, and a cost model
// built from it must answer each measured call with its measured seconds.
#include "core/cost/calibration.hpp"
#include "fuzz_common.hpp"

namespace {

using dmuon::fuzz::require;

void require_same(const dmuon::CalibrationTable& a, const dmuon::CalibrationTable& b) {
  require(a.gpu == b.gpu && a.source == b.source, "round trip keeps gpu and source");
  require(a.gemm_tflops == b.gemm_tflops && a.hbm_GBps == b.hbm_GBps, "round trip keeps rates");
  require(a.ns.size() == b.ns.size(), "round trip keeps every entry");
  for (std::size_t i = 0; i < a.ns.size(); ++i) {
    const auto &x = a.ns[i], &y = b.ns[i];
    require(x.rows == y.rows && x.cols == y.cols && x.kernel == y.kernel && x.dtype == y.dtype &&
                x.steps == y.steps && x.restarts == y.restarts && x.batch == y.batch && x.seconds == y.seconds,
            "round trip keeps entries");
  }
  require(a == b, "round trip keeps every key");
  require(a.elementwise.momentum_GBps == b.elementwise.momentum_GBps &&
              a.elementwise.update_GBps == b.elementwise.update_GBps &&
              a.elementwise.adamw_GBps == b.elementwise.adamw_GBps,
          "round trip keeps elementwise rates");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = dmuon::fuzz::as_text(data, size);
  dmuon::fuzz::expect_only_errors([&] {
    const auto table = dmuon::parse_calibration(dmuon::YamlValue::load_string(text, "fuzz-calibration.yaml"));
    const auto again = dmuon::parse_calibration(
        dmuon::YamlValue::load_string(dmuon::calibration_to_yaml(table), "saved-calibration.yaml"));
    require_same(table, again);
    dmuon::DeviceProfile profile = dmuon::device_profile("h100-sxm");
    profile.name = table.gpu;
    const dmuon::CostModel model(profile, table);
    for (const auto& e : table.ns) {
      const auto t = model.ns_time(e.rows, e.cols, e.kernel, e.dtype, e.steps, e.restarts, e.batch);
      require(t.seconds == e.seconds && t.source == "measured", "a measured call is answered by its entry");
    }
  });
  return 0;
}
