// GPU tests pass with a printed "SKIP ..." line when no GPU is visible (CI has none).
#pragma once
#include <iostream>
#include <string>

#include "kernels/device_query.hpp"

inline bool skip_without_gpu() {
  const std::string reason = dmuon::cuda::no_device_reason();
  if (reason.empty()) return false;
  std::cout << "SKIP GPU checks: " << reason << "\n";
  return true;
}
