// An owned CUDA stream and an owned CUDA event, for operations that spread their work over a few
// streams of their own (a copy stream in, the context's stream computing, a copy stream out) and
// order them with events instead of waiting on the host. Move-only; destroyed with the owner.
#ifndef MATRIXD_CORE_CUDA_CUDA_STREAM_H_
#define MATRIXD_CORE_CUDA_CUDA_STREAM_H_

#include <cuda_runtime.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/cuda_status.h"

namespace matrixd::cuda {

// A non-blocking stream on the current device (it does not synchronise with the legacy default
// stream, as the contexts' streams do not).
class CudaStream {
 public:
  static absl::StatusOr<CudaStream> Create() {
    cudaStream_t stream = nullptr;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return CudaStream(stream);
  }
  // The same with a scheduling priority (cudaDeviceGetStreamPriorityRange: lower is higher).
  static absl::StatusOr<CudaStream> CreateWithPriority(int priority) {
    cudaStream_t stream = nullptr;
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority));
    return CudaStream(stream);
  }
  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&&) = delete;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  // Work still queued finishes first (cudaStreamDestroy returns at once and lets it run).
  ~CudaStream() {
    if (stream_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaStreamDestroy(stream_));
  }

  cudaStream_t get() const { return stream_; }

 private:
  explicit CudaStream(cudaStream_t stream) : stream_(stream) {}
  cudaStream_t stream_ = nullptr;
};

// An event without timing, for ordering: Record it on one stream, make others wait for it.
class CudaEvent {
 public:
  static absl::StatusOr<CudaEvent> Create() {
    cudaEvent_t event = nullptr;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    return CudaEvent(event);
  }
  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&&) = delete;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() {
    if (event_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaEventDestroy(event_));
  }

  cudaEvent_t get() const { return event_; }

  // Marks the work queued on `stream` so far.
  absl::Status Record(cudaStream_t stream) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(event_, stream));
    return absl::OkStatus();
  }
  // Work queued on `stream` after this waits for the last Record's work. Does not block the host.
  absl::Status MakeWait(cudaStream_t stream) const {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, event_, 0));
    return absl::OkStatus();
  }
  // Blocks the host until the last Record's work is done.
  absl::Status Synchronize() const {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_));
    return absl::OkStatus();
  }

 private:
  explicit CudaEvent(cudaEvent_t event) : event_(event) {}
  cudaEvent_t event_ = nullptr;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_CUDA_STREAM_H_
