#include "core/cuda/kernel_timer.h"

#include <utility>

namespace matrixd::cuda {

absl::StatusOr<KernelTimer> KernelTimer::Start(cudaStream_t stream) {
  absl::StatusOr<EventTimer> timer = EventTimer::Create();
  if (!timer.ok()) return timer.status();
  if (absl::Status s = timer->Start(stream); !s.ok()) return s;
  return KernelTimer(*std::move(timer), stream);
}

absl::Status KernelTimer::Stop() { return timer_.Stop(stream_); }

absl::Status KernelTimer::AppendTo(ComputeStats* stats, std::string kernel, uint64_t bytes,
                                   double flops) {
  absl::StatusOr<double> seconds = timer_.Seconds();
  if (!seconds.ok()) return seconds.status();
  stats->kernels.push_back(
      {.kernel = std::move(kernel), .seconds = *seconds, .bytes = bytes, .flops = flops});
  return absl::OkStatus();
}

}  // namespace matrixd::cuda
