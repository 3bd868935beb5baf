#include "core/make_backend.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/cpu_backend.h"
#ifdef MATRIXD_HAVE_CUDA
#include "core/cuda/cuda_backend.h"
#endif
#ifdef MATRIXD_HAVE_MULTI_GPU
#include "core/multi_gpu/multi_gpu_backend.h"
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
    absl::StatusOr<std::unique_ptr<Backend>> cuda =
        MakeCudaBackend(config.devices, config.device_memory_limit, config.streams_per_device,
                        config.state_dir, config.host_max_orders);
#ifdef MATRIXD_HAVE_MULTI_GPU
    if (cuda.ok()) {
      std::vector<int> devices = config.devices;
      if (devices.empty()) {
        for (int d = 0; d < CudaDeviceCount(); ++d) devices.push_back(d);
      }
      cuda = multi_gpu::WithMultiGpuProducts(*std::move(cuda), std::move(devices),
                                             config.device_memory_limit);
    }
#endif
    return cuda;
#else
    return absl::UnavailableError("backend \"cuda\": this build has no CUDA backend");
#endif
  }
  return absl::InvalidArgumentError(
      absl::StrCat("backend \"", name, "\" is unknown; want auto, cpu or cuda"));
}

}  // namespace matrixd
