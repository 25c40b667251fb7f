// One include for Catch2 v2 (Debian 12, single header) and v3 (GPU machine, split headers),
// so the same tests build on both.
#pragma once
#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
using Catch::Approx;
namespace Catch {
// v2's spelling of the substring matcher.
inline Matchers::StringContainsMatcher Contains(const std::string& text) {
  return Matchers::ContainsSubstring(text);
}
}  // namespace Catch
#define DMUON_CATCH_V3 1
#else
#include <catch2/catch.hpp>
#endif
