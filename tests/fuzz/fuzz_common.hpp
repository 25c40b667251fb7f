// Shared by the libFuzzer targets: what counts as a finding. Bad input must end in one
// dmuon::Error; any other exception (yaml-cpp's, std::out_of_range, bad_alloc...), a crash, a
// sanitizer report, a leak or a hang is a bug, and a broken round-trip property aborts.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace dmuon::fuzz {

// Runs `body`; swallows only dmuon::Error (the documented outcome of bad input).
template <typename Body>
void expect_only_errors(Body body) {
  try {
    body();
  } catch (const dmuon::Error&) {
  }
}

// A property that must hold for every input the loader accepted.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz property violated: %s\n", what);
    std::abort();
  }
}

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace dmuon::fuzz
