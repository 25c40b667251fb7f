// Which GPUs this process can use; lets GPU tests and tools skip with a message when none.
#pragma once
#include <string>
#include <vector>

namespace dmuon::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  int multiprocessors = 0;
  double memory_GiB = 0;
};

// Empty when there is no driver or no device (never throws for that case); throws dmuon::Error
// for any other CUDA failure.
std::vector<DeviceInfo> visible_devices();
// "no CUDA device visible: <reason>" or "" when at least one device is visible.
std::string no_device_reason();
// "driver 13.0, runtime 13.0": the CUDA driver's and this build's runtime versions (provenance
// of calibration files). Throws dmuon::Error on a CUDA failure.
std::string cuda_versions();

}  // namespace dmuon::cuda
