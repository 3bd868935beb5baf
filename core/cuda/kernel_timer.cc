#include "core/cuda/kernel_timer.h"

#include <utility>

#include "core/status_macros.h"

namespace matrixd::cuda {

absl::StatusOr<KernelTimer> KernelTimer::Start(cudaStream_t stream) {
  MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  MATRIXD_RETURN_IF_ERROR(timer.Start(stream));
  return KernelTimer(std::move(timer), stream);
}

absl::Status KernelTimer::Stop() { return timer_.Stop(stream_); }

absl::Status KernelTimer::AppendTo(ComputeStats* stats, std::string kernel, uint64_t bytes,
                                   double flops) {
  MATRIXD_ASSIGN_OR_RETURN(double seconds, timer_.Seconds());
  stats->kernels.push_back(
      {.kernel = std::move(kernel), .seconds = seconds, .bytes = bytes, .flops = flops});
  return absl::OkStatus();
}

}  // namespace matrixd::cuda
