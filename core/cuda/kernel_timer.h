// Per-kernel timing for the metrics: a pair of CUDA events around one kernel or library call on
// the job's stream, turned into a KernelRecord (core/operations.h) once the stream has passed it.
#ifndef MATRIXD_CORE_CUDA_KERNEL_TIMER_H_
#define MATRIXD_CORE_CUDA_KERNEL_TIMER_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/operations.h"

namespace matrixd::cuda {

class KernelTimer {
 public:
  // Records the start event on `stream`: call it right before the kernel is queued.
  static absl::StatusOr<KernelTimer> Start(cudaStream_t stream);

  // Records the stop event: call it right after the kernel is queued. Does not wait.
  absl::Status Stop();
  // Waits for the stop event (free once the operation has synchronised, as each does before
  // returning) and appends {kernel, seconds between the events, bytes, flops} to stats->kernels.
  absl::Status AppendTo(ComputeStats* stats, std::string kernel, uint64_t bytes, double flops);

 private:
  KernelTimer(EventTimer timer, cudaStream_t stream) : timer_(std::move(timer)), stream_(stream) {}

  EventTimer timer_;
  cudaStream_t stream_;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_KERNEL_TIMER_H_
