// libFuzzer target: the .npy reader (core/io/npy.hpp parse_npy). Whatever it accepts must survive
// format_npy -> parse_npy unchanged (same shape, same values, NaN for NaN).
#include <cmath>

#include "core/io/npy.hpp"
#include "fuzz_common.hpp"

namespace {

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = dmuon::fuzz::as_text(data, size);
  dmuon::fuzz::expect_only_errors([&] {
    const dmuon::NpyArray a = dmuon::parse_npy(bytes, "fuzz.npy");
    dmuon::fuzz::require(a.dtype == "float32" || a.dtype == "float64", "dtype is float32 or float64");
    const dmuon::NpyArray b = dmuon::parse_npy(dmuon::format_npy(a.shape, a.data, a.dtype == "float32"), "again.npy");
    dmuon::fuzz::require(b.shape == a.shape && b.dtype == a.dtype && b.data.size() == a.data.size(),
                         "npy round trip keeps shape and dtype");
    for (std::size_t i = 0; i < a.data.size(); ++i) {
      dmuon::fuzz::require(same_value(a.data[i], b.data[i]), "npy round trip keeps values");
    }
  });
  return 0;
}
