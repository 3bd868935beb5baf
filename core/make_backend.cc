#include "core/make_backend.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/cpu_backend.h"
#ifdef MATRIXD_HAVE_CUDA
#include "core/cuda/cuda_backend.h"
#endif

namespace matrixd {

bool CudaDeviceAvailable() {
#ifdef MATRIXD_HAVE_CUDA
  return CudaDeviceCount() > 0;
#else
  return false;
#endif
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(absl::string_view name,
                                                     const BackendConfig& config) {
  if (name == "cpu" || (name == "auto" && !CudaDeviceAvailable())) {
    return MakeCpuBackend({.threads = config.cpu_threads, .state_dir = config.state_dir});
  }
  if (name == "cuda" || name == "auto") {
#ifdef MATRIXD_HAVE_CUDA
    return MakeCudaBackend(config.devices, config.device_memory_limit, config.streams_per_device);
#else
    return absl::UnavailableError("backend \"cuda\": this build has no CUDA backend");
#endif
  }
  return absl::InvalidArgumentError(
      absl::StrCat("backend \"", name, "\" is unknown; want auto, cpu or cuda"));
}

}  // namespace matrixd
