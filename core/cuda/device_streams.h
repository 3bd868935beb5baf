// The contexts of one CUDA device, one stream each, lent to one operation at a time: N contexts
// let N operations run on the device at once, each on its own stream with its own library
// handles, all allocating from the device's one pool. Thread-safe.
#ifndef MATRIXD_CORE_CUDA_DEVICE_STREAMS_H_
#define MATRIXD_CORE_CUDA_DEVICE_STREAMS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/backend.h"
#include "core/cuda/device_context.h"

namespace matrixd::cuda {

class DeviceStreams {
 public:
  // A context lent by Acquire; returned to its DeviceStreams when destroyed. Move-only.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : owner_(other.owner_), context_(other.context_) {
      other.owner_ = nullptr;
      other.context_ = nullptr;
    }
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

    DeviceContext& context() const { return *context_; }

   private:
    friend class DeviceStreams;
    Lease(DeviceStreams* owner, DeviceContext* context) : owner_(owner), context_(context) {}
    DeviceStreams* owner_;
    DeviceContext* context_;
  };

  // `streams` >= 1 contexts on `device`, sharing the pool capped at `memory_limit`. Errors as
  // DeviceContext::Create, and INVALID_ARGUMENT for streams < 1.
  static absl::StatusOr<std::unique_ptr<DeviceStreams>> Create(
      int device, int streams, const DeviceMemoryLimit& memory_limit);

  // "NVIDIA H100 80GB HBM3 (device 0)": as ComputeStats::device.
  const std::string& description() const { return description_; }
  // The first context: properties, memory limit and pool counters are the same for all.
  const DeviceContext& primary() const { return *contexts_.front(); }
  int streams() const { return static_cast<int>(contexts_.size()); }

  // Lends a free context, waiting while all are lent.
  Lease Acquire();
  // Contexts lent now.
  int busy() const;

 private:
  DeviceStreams(std::string description, std::vector<std::unique_ptr<DeviceContext>> contexts);
  void Return(DeviceContext* context);

  const std::string description_;
  const std::vector<std::unique_ptr<DeviceContext>> contexts_;
  mutable absl::Mutex mutex_;
  std::vector<DeviceContext*> free_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DEVICE_STREAMS_H_
