// core/cost/host_paced: forward and backward compute as one host thread paces it, against
// schedules worked out by hand.
#include <catch2/catch.hpp>

#include "core/cost/host_paced.hpp"
#include "core/error.hpp"

#include <limits>

using namespace dmuon;

namespace {
double total(const std::vector<PacedTime>& t) {
  double s = 0;
  for (const auto& x : t) s += x.seconds;
  return s;
}
}  // namespace

TEST_CASE("a GPU-bound run keeps its GPU times bit for bit", "[host_paced]") {
  const auto t = host_paced({{0.1, 0}, {0.3, 0.2}, {0.7, 0.05}, {0.11, 0.11}});
  REQUIRE(t.size() == 4);
  CHECK(t[0].seconds == 0.1);
  CHECK(t[1].seconds == 0.3);  // its host ends at 0.2, its GPU at 0.4
  CHECK(t[2].seconds == 0.7);
  CHECK(t[3].seconds == 0.11);
  for (const auto& x : t) CHECK_FALSE(x.waited);
}

TEST_CASE("a host-bound run takes the host's time; a GPU-heavy unit is absorbed by the host's lead", "[host_paced]") {
  // Three host-bound units (GPU 1, host 2), a head with 3 of GPU and no host, four more
  // host-bound units. Host: issues 0-2, 2-4, 4-6, the head at 6, then 6-8, 8-10, 10-12, 12-14.
  // GPU: 1-2, 3-4, 5-6 (each waits for its last kernel), the head 6-9, then 9-10, 10-11, 11-12
  // (each issued before the GPU gets to it: a backlog the host's lead eats, 1 a unit), and the
  // last 12-13 waits for its host until 14. The step takes the host's 14: the head is hidden.
  const auto t = host_paced({{1, 2}, {1, 2}, {1, 2}, {3, 0}, {1, 2}, {1, 2}, {1, 2}, {1, 2}});
  REQUIRE(t.size() == 8);
  const double expected[] = {2, 2, 2, 3, 1, 1, 1, 2};
  const bool waited[] = {true, true, true, false, false, false, false, true};
  for (int k = 0; k < 8; ++k) {
    CHECK(t[k].seconds == expected[k]);
    CHECK(t[k].waited == waited[k]);
  }
  CHECK(total(t) == 14);
  // Two host-bound units after the head absorb 2 of its 3: the step ends 1 after the host.
  CHECK(total(host_paced({{1, 2}, {1, 2}, {1, 2}, {3, 0}, {1, 2}, {1, 2}})) == 11);
}

TEST_CASE("a unit after a host-bound one starts when it ends, issued by then", "[host_paced]") {
  // Host 5 on the first unit (GPU 1): the second (GPU 1, host 0) is issued at 5, when the first
  // ends, and ends at 6 without waiting.
  const auto t = host_paced({{1, 5}, {1, 0}});
  CHECK(t[0].seconds == 5);
  CHECK(t[1].seconds == 1);
  CHECK_FALSE(t[1].waited);
}

TEST_CASE("host_paced refuses negative and non-finite times naming the unit", "[host_paced]") {
  CHECK_THROWS_WITH(host_paced({{1, 0}, {-1, 0}}), Catch::Contains("unit 1"));
  CHECK_THROWS_WITH(host_paced({{1, std::numeric_limits<double>::infinity()}}), Catch::Contains("unit 0"));
  CHECK(host_paced({}).empty());
}
