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
  if (absl::Status s = context.Activate(); !s.ok()) return s;
  absl::StatusOr<DeviceBuffer> source = context.Allocate(bytes);
  if (!source.ok()) return source.status();
  absl::StatusOr<DeviceBuffer> target = context.Allocate(bytes);
  if (!target.ok()) return target.status();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(source->data(), 1, bytes, context.stream()));
  // The first copy pays for first-touch mapping of the pool's pages and for the kernel's load.
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchCopy(source->data(), target->data(), bytes, context.stream()));
  absl::StatusOr<EventTimer> timer = EventTimer::Create();
  if (!timer.ok()) return timer.status();
  double fastest = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeats; ++i) {
    if (absl::Status s = timer->Start(context.stream()); !s.ok()) return s;
    MATRIXD_CUDA_RETURN_IF_ERROR(
        LaunchCopy(source->data(), target->data(), bytes, context.stream()));
    if (absl::Status s = timer->Stop(context.stream()); !s.ok()) return s;
    absl::StatusOr<double> seconds = timer->Seconds();
    if (!seconds.ok()) return seconds.status();
    fastest = std::min(fastest, *seconds);
  }
  if (absl::Status s = context.Synchronize(); !s.ok()) return s;
  if (!(fastest > 0.0)) return absl::InternalError("copy bandwidth: the copy took no time");
  return 2.0 * static_cast<double>(bytes) / fastest;
}

}  // namespace matrixd::cuda
