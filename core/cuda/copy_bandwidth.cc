#include "core/cuda/copy_bandwidth.h"

#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"

namespace matrixd::cuda {

absl::StatusOr<double> MeasureCopyBandwidth(DeviceContext& context, size_t bytes, int repeats) {
  if (repeats < 1) return absl::InvalidArgumentError("copy bandwidth: repeats must be >= 1");
  bytes = std::max<size_t>(bytes - bytes % 16, 16);
  MATRIXD_RETURN_IF_ERROR(context.Activate());
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer source, context.Allocate(bytes));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer target, context.Allocate(bytes));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(source.data(), 1, bytes, context.stream()));
  // The first copy pays for first-touch mapping of the pool's pages and for the kernel's load.
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchCopy(source.data(), target.data(), bytes, context.stream()));
  MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  double fastest = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeats; ++i) {
    MATRIXD_RETURN_IF_ERROR(timer.Start(context.stream()));
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchCopy(source.data(), target.data(), bytes, context.stream()));
    MATRIXD_RETURN_IF_ERROR(timer.Stop(context.stream()));
    MATRIXD_ASSIGN_OR_RETURN(double seconds, timer.Seconds());
    fastest = std::min(fastest, seconds);
  }
  MATRIXD_RETURN_IF_ERROR(context.Synchronize());
  if (!(fastest > 0.0)) return absl::InternalError("copy bandwidth: the copy took no time");
  return 2.0 * static_cast<double>(bytes) / fastest;
}

}  // namespace matrixd::cuda
