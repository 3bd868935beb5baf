// Memory as a resource (rmm's device_memory_resource): one small interface that hands out and takes
// back bytes in stream order, and adaptors that each add one thing on top of another resource — a
// cap (LimitingResource), counters (StatisticsResource), a reclaim-and-retry on exhaustion
// (RetryOnExhaustionResource). A CUDA pool (core/cuda/cuda_memory_resource.h) sits at the bottom
// of DeviceContext's stack; the adaptors know nothing of CUDA and are tested without a GPU.
//
// An adaptor does not own its upstream: the upstream must outlive it. All resources here are
// thread-safe.
#ifndef MATRIXD_CORE_MEMORY_RESOURCE_H_
#define MATRIXD_CORE_MEMORY_RESOURCE_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace matrixd {

// The stream an allocation is ordered on, opaque to everything but the resource at the bottom (a
// cudaStream_t for the CUDA pool); null is the default stream, or "no stream" on the host.
using MemoryStream = void*;

class MemoryResource {
 public:
  virtual ~MemoryResource() = default;

  // Returns `bytes` bytes usable by work queued on `stream` from now on; null for 0 bytes.
  // RESOURCE_EXHAUSTED when there is not enough memory (the message names the bytes requested);
  // other codes for other failures.
  absl::StatusOr<void*> Allocate(size_t bytes, MemoryStream stream) {
    if (bytes == 0) return nullptr;
    return DoAllocate(bytes, stream);
  }
  // Gives back what Allocate(bytes, stream) returned, once the work queued on `stream` before this
  // call is done. REQUIRES: the same `bytes` and `stream`. Null is ignored.
  void Deallocate(void* data, size_t bytes, MemoryStream stream) {
    if (data != nullptr) DoDeallocate(data, bytes, stream);
  }

 private:
  virtual absl::StatusOr<void*> DoAllocate(size_t bytes, MemoryStream stream) = 0;
  virtual void DoDeallocate(void* data, size_t bytes, MemoryStream stream) = 0;
};

// Refuses an allocation that would take the bytes allocated through it above `limit`
// (rmm's limiting_resource_adaptor): RESOURCE_EXHAUSTED naming the bytes requested and free.
class LimitingResource final : public MemoryResource {
 public:
  LimitingResource(MemoryResource* upstream, uint64_t limit) : upstream_(upstream), limit_(limit) {}

  uint64_t limit() const { return limit_; }
  uint64_t allocated() const;

 private:
  absl::StatusOr<void*> DoAllocate(size_t bytes, MemoryStream stream) override;
  void DoDeallocate(void* data, size_t bytes, MemoryStream stream) override;

  MemoryResource* const upstream_;
  const uint64_t limit_;
  mutable absl::Mutex mutex_;
  uint64_t allocated_ ABSL_GUARDED_BY(mutex_) = 0;
};

// Counts what passes through it (rmm's statistics_resource_adaptor).
struct MemoryStatistics {
  uint64_t current_bytes = 0;  // allocated and not yet deallocated
  uint64_t peak_bytes = 0;     // the most current_bytes has been
  uint64_t total_bytes = 0;    // every successful allocation, summed
  uint64_t current_count = 0;
  uint64_t peak_count = 0;
  uint64_t total_count = 0;
  uint64_t failed_count = 0;  // allocations the upstream refused
};

class StatisticsResource final : public MemoryResource {
 public:
  explicit StatisticsResource(MemoryResource* upstream) : upstream_(upstream) {}

  MemoryStatistics statistics() const;
  // Starts the peaks again from the current figures.
  void ResetPeaks();

 private:
  absl::StatusOr<void*> DoAllocate(size_t bytes, MemoryStream stream) override;
  void DoDeallocate(void* data, size_t bytes, MemoryStream stream) override;

  MemoryResource* const upstream_;
  mutable absl::Mutex mutex_;
  MemoryStatistics statistics_ ABSL_GUARDED_BY(mutex_);
};

// On RESOURCE_EXHAUSTED from its upstream, calls `reclaim` (which frees or trims what it can, e.g.
// waits for pending stream-ordered frees and gives cached memory back) and tries again, up to
// `max_retries` times while `reclaim` reports that it could do something. Other failures, and the
// last exhaustion, are returned unchanged.
class RetryOnExhaustionResource final : public MemoryResource {
 public:
  // Returns whether a retry may succeed now; gets the bytes wanted and the allocation's stream.
  using Reclaim = std::function<bool(size_t bytes, MemoryStream stream)>;

  RetryOnExhaustionResource(MemoryResource* upstream, Reclaim reclaim, int max_retries = 1)
      : upstream_(upstream), reclaim_(std::move(reclaim)), max_retries_(max_retries) {}

 private:
  absl::StatusOr<void*> DoAllocate(size_t bytes, MemoryStream stream) override;
  void DoDeallocate(void* data, size_t bytes, MemoryStream stream) override;

  MemoryResource* const upstream_;
  const Reclaim reclaim_;
  const int max_retries_;
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_MEMORY_RESOURCE_H_
