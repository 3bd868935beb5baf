// Untyped device memory owned by one object (rmm's device_buffer): bytes from a MemoryResource,
// ordered on a CUDA stream, given back on that stream when the buffer is destroyed or reassigned.
// Moved, never copied.
#ifndef MATRIXD_CORE_CUDA_DEVICE_BUFFER_H_
#define MATRIXD_CORE_CUDA_DEVICE_BUFFER_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "core/memory_resource.h"

namespace matrixd::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Takes ownership of `data`, which `resource` allocated with (bytes, stream).
  DeviceBuffer(MemoryResource* resource, void* data, size_t bytes, cudaStream_t stream)
      : resource_(resource), data_(data), bytes_(bytes), stream_(stream) {}
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      Reset();
      resource_ = std::exchange(other.resource_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  cudaStream_t stream() const { return stream_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  // Stream-ordered: the memory is reused only after the work queued before this call, so a buffer
  // may go out of scope while kernels that use it are still running.
  void Reset() {
    if (data_ != nullptr) resource_->Deallocate(data_, bytes_, stream_);
    resource_ = nullptr;
    data_ = nullptr;
    bytes_ = 0;
    stream_ = nullptr;
  }

  MemoryResource* resource_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DEVICE_BUFFER_H_
