// Chooses and creates the compute backend by name.
#ifndef MATRIXD_CORE_MAKE_BACKEND_H_
#define MATRIXD_CORE_MAKE_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/backend.h"

namespace matrixd {

// CUDA: determinants, and factorizations of one matrix, of order up to these, from host memory,
// are computed on the host CPU (core/cuda/host_small_jobs.h); 0 sends every such job to the
// device.
inline constexpr int kHostDeterminantMaxOrder = 64;
inline constexpr int kHostFactorizeMaxOrder = 64;
struct HostMaxOrders {
  int determinant = kHostDeterminantMaxOrder;
  int factorize = kHostFactorizeMaxOrder;
};

struct BackendConfig {
  std::vector<int> devices = {};               // CUDA device ordinals; empty = all visible
  int cpu_threads = 0;                         // 0 = all hardware threads
  DeviceMemoryLimit device_memory_limit = {};  // per CUDA device; default 90% of its memory
  int streams_per_device = 1;          // CUDA operations at once per device, one stream each
  std::string state_dir = {};          // checkpoints of long permanents; empty = none
  HostMaxOrders host_max_orders = {};  // CUDA; see above
};

// True when this build has the CUDA backend and at least one CUDA device is usable.
bool CudaDeviceAvailable();

// name: "cpu", "cuda" (UNAVAILABLE without a usable device or CUDA build) or "auto" (CUDA when a
// device is present, else CPU). Unknown names give INVALID_ARGUMENT.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(absl::string_view name,
                                                     const BackendConfig& config);

}  // namespace matrixd

#endif  // MATRIXD_CORE_MAKE_BACKEND_H_
