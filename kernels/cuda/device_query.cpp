#include "kernels/cuda/device_query.hpp"

#include "kernels/cuda/cuda_check.hpp"

namespace dmuon::cuda {
namespace {

// No driver, no device and a driver too old are all "nothing to run on", not errors.
bool means_no_device(cudaError_t status) {
  return status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver ||
         status == cudaErrorInitializationError || status == cudaErrorSystemDriverMismatch;
}

}  // namespace

std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess && count > 0) return "";
  if (status == cudaSuccess) return "no CUDA device visible: the driver reports 0 devices";
  if (means_no_device(status)) return std::string("no CUDA device visible: ") + cudaGetErrorString(status);
  check(status, "cudaGetDeviceCount", __FILE__, __LINE__);
  return "";
}

std::vector<DeviceInfo> visible_devices() {
  std::vector<DeviceInfo> out;
  if (!no_device_reason().empty()) return out;
  int count = 0;
  DMUON_CUDA_CHECK(cudaGetDeviceCount(&count));
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    DMUON_CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    out.push_back({i, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                   static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0)});
  }
  return out;
}

std::string cuda_versions() {
  int driver = 0, runtime = 0;
  DMUON_CUDA_CHECK(cudaDriverGetVersion(&driver));
  DMUON_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  // Both encode 1000 * major + 10 * minor.
  auto text = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  return "driver " + text(driver) + ", runtime " + text(runtime);
}

}  // namespace dmuon::cuda
