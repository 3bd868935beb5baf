// A CUDA event that the host waits on by sleeping rather than spinning, for operations that run
// in slices of tens of milliseconds and check for cancellation between them: a spinning wait
// would take a CPU core from the server for the whole operation.
#ifndef MATRIXD_CORE_CUDA_BLOCKING_EVENT_H_
#define MATRIXD_CORE_CUDA_BLOCKING_EVENT_H_

#include <cuda_runtime.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/cuda_status.h"

namespace matrixd::cuda {

class BlockingEvent {
 public:
  static absl::StatusOr<BlockingEvent> Create() {
    cudaEvent_t event = nullptr;
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaEventCreateWithFlags(&event, cudaEventBlockingSync | cudaEventDisableTiming));
    return BlockingEvent(event);
  }
  BlockingEvent(BlockingEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  BlockingEvent& operator=(BlockingEvent&&) = delete;
  BlockingEvent(const BlockingEvent&) = delete;
  BlockingEvent& operator=(const BlockingEvent&) = delete;
  ~BlockingEvent() {
    if (event_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaEventDestroy(event_));
  }

  // Returns once the work queued on `stream` so far has finished.
  absl::Status WaitFor(cudaStream_t stream) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(event_, stream));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_));
    return absl::OkStatus();
  }

 private:
  explicit BlockingEvent(cudaEvent_t event) : event_(event) {}
  cudaEvent_t event_ = nullptr;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_BLOCKING_EVENT_H_
