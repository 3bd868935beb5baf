#include "core/cuda/library_versions.h"

#include <cublas_v2.h>
#include <cusolver_common.h>
#include <library_types.h>

#include "absl/strings/str_cat.h"
#include "core/cpu/library_versions.h"

namespace matrixd::cuda {
namespace {

// CUDA encodes versions as 1000 * major + 10 * minor.
std::string RuntimeVersion(cudaError_t status, int version) {
  if (status != cudaSuccess) return "unknown";
  return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
}

template <typename Status, typename GetProperty>
std::string LibraryVersion(GetProperty get_property, Status ok) {
  int major = 0, minor = 0, patch = 0;
  if (get_property(MAJOR_VERSION, &major) != ok || get_property(MINOR_VERSION, &minor) != ok ||
      get_property(PATCH_LEVEL, &patch) != ok) {
    return "unknown";
  }
  return absl::StrCat(major, ".", minor, ".", patch);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> CudaLibraryVersions(
    const cudaDeviceProp& properties) {
  int driver = 0, runtime = 0;
  const cudaError_t driver_status = cudaDriverGetVersion(&driver);
  const cudaError_t runtime_status = cudaRuntimeGetVersion(&runtime);
  std::vector<std::pair<std::string, std::string>> versions = {
      {"device_model", properties.name},
      {"compute_capability", absl::StrCat(properties.major, ".", properties.minor)},
      {"driver", RuntimeVersion(driver_status, driver)},
      {"cuda_runtime", RuntimeVersion(runtime_status, runtime)},
      {"cublas", LibraryVersion(&cublasGetProperty, CUBLAS_STATUS_SUCCESS)},
      {"cusolver", LibraryVersion(&cusolverGetProperty, CUSOLVER_STATUS_SUCCESS)},
  };
  for (auto& entry : cpu::CpuLibraryVersions()) versions.push_back(std::move(entry));
  return versions;
}

}  // namespace matrixd::cuda
