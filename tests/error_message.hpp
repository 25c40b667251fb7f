// The message of the dmuon::Error a call throws, for tests that check the exact wording; any
// other exception escapes and fails the test.
#pragma once
#include <functional>
#include <string>

#include "core/error.hpp"

namespace dmuon::test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace dmuon::test
