// What one worker needs to run operations on one CUDA device: the device ordinal and properties,
// a stream, cuBLAS/cuSOLVER/cuSPARSE handles bound to that stream, and stream-ordered allocation
// through the device's memory stack (cuda_memory_resource.h: pool -> limit -> statistics -> retry)
// capped at the device-memory limit. Every resource is owned (RAII), moved never
// copied.
#ifndef MATRIXD_CORE_CUDA_DEVICE_CONTEXT_H_
#define MATRIXD_CORE_CUDA_DEVICE_CONTEXT_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/cuda/cuda_memory_resource.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/pinned_staging.h"
#include "core/cuda/side_lane.h"
#include "core/memory_resource.h"

namespace matrixd::cuda {

// Records elapsed device time on a stream between Start() and Stop().
class EventTimer {
 public:
  static absl::StatusOr<EventTimer> Create();
  EventTimer(EventTimer&& other) noexcept;
  EventTimer& operator=(EventTimer&& other) = delete;
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  ~EventTimer();

  absl::Status Start(cudaStream_t stream);
  absl::Status Stop(cudaStream_t stream);
  // Waits for the stop event; seconds between the two events.
  absl::StatusOr<double> Seconds();

 private:
  EventTimer(cudaEvent_t start, cudaEvent_t stop) : start_(start), stop_(stop) {}
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

class DeviceContext {
 public:
  // Creates a stream and library handles on `device`, allocating from a stream-ordered pool
  // (cudaMemPool_t) whose size is capped at `memory_limit` of the device (rounded down to 2 MiB).
  // Contexts of one device with the same limit share one memory stack (pool, limit, statistics),
  // so the cap holds for all of them together; the pool keeps up to the limit cached between
  // operations (release threshold = limit).
  // UNAVAILABLE if the device cannot be used; INVALID_ARGUMENT for a limit below 2 MiB or a
  // fraction outside (0, 1].
  static absl::StatusOr<std::unique_ptr<DeviceContext>> Create(
      int device, const DeviceMemoryLimit& memory_limit = {});
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int device() const { return device_; }

  // Whether `data` points into this context's device's memory (false for host, managed or

  // another device's memory, and for pointers CUDA does not know).

  bool OnThisDevice(const void* data) const;
  const cudaDeviceProp& properties() const { return properties_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  cusolverDnHandle_t cusolver() const { return cusolver_; }
  cusparseHandle_t cusparse() const { return cusparse_; }
  // The context's high-priority second stream and its cuBLAS handle (side_lane.h), made on first
  // use and kept: for operations that run a critical path beside bulk work on stream(). REQUIRES:
  // the context's device is current.
  absl::StatusOr<SideLane*> side_lane();

  // Makes this context's device current for the calling thread.
  absl::Status Activate() const;
  // Stream-ordered allocation on the context's stream through the device's memory stack.
  // RESOURCE_EXHAUSTED when the limit is reached or the device is out of memory (after waiting for
  // the stream's pending frees, trimming the pool's cache and trying again).
  absl::StatusOr<DeviceBuffer> Allocate(size_t bytes);
  // The resource Allocate draws from (shared by every context of this device and limit), for
  // typed containers (device_vector.h); allocate from it on stream().
  MemoryResource& memory_resource() const { return memory_->resource(); }
  // The cap in bytes, the pool and its counters now, and the stack's counters (current, peak and
  // total bytes allocated through every context of this device and limit).
  uint64_t memory_limit() const { return memory_->limit(); }
  cudaMemPool_t memory_pool() const { return memory_->pool().pool(); }
  absl::StatusOr<MemoryPoolUsage> MemoryUsage() const { return memory_->pool().Usage(); }
  MemoryStatistics memory_statistics() const { return memory_->statistics(); }
  // Copies host -> device / device -> host on the stream. Large copies from or to pageable memory
  // go through the context's pinned staging chunks (see pinned_staging.h); pinned memory and small
  // copies go directly. Upload returns once `host` has been read; Download once it is written.
  // Upload's source may also be device memory (a resident matrix's kDevice view): a device copy.
  absl::Status Upload(const void* host, DeviceBuffer& device, size_t bytes);
  absl::Status Download(const DeviceBuffer& device, void* host, size_t bytes);
  // Copies host -> `device` (any device address of this context's device) on the stream, through
  // the pinned staging whenever `host` is pageable, whatever the size: for a stream of pieces
  // (an upload's chunks), each returns once its piece has been read and its transfer overlaps the
  // next piece's. Synchronize() waits for the last one.
  absl::Status StagedUpload(const void* host, void* device, size_t bytes);
  // The pinned staging (on stream()) that Upload of `bytes` from `host` goes through, or null
  // when it copies directly (page-locked or device memory, small copies, no staging): for
  // uploads that convert on the way (PinnedStaging::UploadInPieces).
  PinnedStaging* StagingFor(const void* host, size_t bytes) const {
    return UseStaging(host, bytes) ? staging_.get() : nullptr;
  }
  // Waits for all work queued on the stream.
  absl::Status Synchronize();

 private:
  // Copies at least this large from or to pageable memory go through staging_.
  static constexpr size_t kStagingFromBytes = size_t{8} << 20;

  DeviceContext() = default;
  bool UseStaging(const void* host, size_t bytes) const;

  int device_ = 0;
  cudaDeviceProp properties_{};
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cusolverDnHandle_t cusolver_ = nullptr;
  cusparseHandle_t cusparse_ = nullptr;
  DeviceMemoryStack* memory_ = nullptr;     // shared, owned by the process-wide stack table
  std::unique_ptr<PinnedStaging> staging_;  // null when page-locked memory was refused
  std::unique_ptr<SideLane> side_lane_;     // null until side_lane() is first called
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DEVICE_CONTEXT_H_
