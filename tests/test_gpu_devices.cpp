// The device query works with and without a GPU: without one it reports why (the reason GPU
// tests print when they skip) and the test is reported as skipped; with one it lists real devices.
#include "catch_compat.hpp"
#include "gpu_skip.hpp"
#include "kernels/cuda/device_query.hpp"

TEST_CASE("device query reports GPUs or why there are none", "[gpu]") {
  const std::string reason = dmuon::cuda::no_device_reason();
  const auto devices = dmuon::cuda::visible_devices();
  if (!reason.empty()) {
    dmuon::test::skip_test("GPU checks", reason);
    CHECK(devices.empty());
    return;
  }
  REQUIRE_FALSE(devices.empty());
  for (const auto& d : devices) {
    CHECK_FALSE(d.name.empty());
    CHECK(d.sm_major >= 7);
    CHECK(d.multiprocessors > 0);
    CHECK(d.memory_GiB > 1.0);
  }
}
