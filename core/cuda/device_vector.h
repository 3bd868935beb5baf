// Typed device memory owned by one object and bound to one stream (rmm's device_uvector): n
// elements of T, uninitialised, from a MemoryResource in stream order, given back on that stream
// when destroyed. Moved, never copied. T must be trivially copyable (the bytes are moved by copy
// engines and kernels, never by constructors).
#ifndef MATRIXD_CORE_CUDA_DEVICE_VECTOR_H_
#define MATRIXD_CORE_CUDA_DEVICE_VECTOR_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/device_context.h"
#include "core/cuda/device_span.h"
#include "core/memory_resource.h"
#include "core/status_macros.h"

namespace matrixd::cuda {

template <typename T>
class DeviceVector {
  static_assert(std::is_trivially_copyable_v<T>, "device elements are moved as bytes");

 public:
  DeviceVector() = default;
  DeviceVector(DeviceVector&& other) noexcept
      : buffer_(std::move(other.buffer_)), size_(std::exchange(other.size_, 0)) {}
  DeviceVector& operator=(DeviceVector&& other) noexcept {
    buffer_ = std::move(other.buffer_);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;

  // `size` elements from `resource`, ordered on `stream`. RESOURCE_EXHAUSTED as the resource
  // says, or when size * sizeof(T) overflows.
  static absl::StatusOr<DeviceVector> Create(MemoryResource& resource, size_t size,
                                             cudaStream_t stream) {
    if (size > std::numeric_limits<size_t>::max() / sizeof(T)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(size, " elements of ", sizeof(T), " bytes do not fit in memory"));
    }
    const size_t bytes = size * sizeof(T);
    MATRIXD_ASSIGN_OR_RETURN(void* data, resource.Allocate(bytes, stream));
    return DeviceVector(DeviceBuffer(&resource, data, bytes, stream), size);
  }
  // `size` elements through `context` (its memory stack, on its stream), with its error messages.
  static absl::StatusOr<DeviceVector> Create(DeviceContext& context, size_t size) {
    if (size > std::numeric_limits<size_t>::max() / sizeof(T)) {
      return Create(context.memory_resource(), size, context.stream());
    }
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer buffer, context.Allocate(size * sizeof(T)));
    return DeviceVector(std::move(buffer), size);
  }

  T* data() const { return buffer_.as<T>(); }
  size_t size() const { return size_; }
  size_t size_bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }
  cudaStream_t stream() const { return buffer_.stream(); }
  DeviceSpan<T> span() const { return DeviceSpan<T>(data(), size_); }
  operator DeviceSpan<T>() const { return span(); }        // NOLINT: a view of it
  operator DeviceSpan<const T>() const { return span(); }  // NOLINT
  // The untyped buffer, for byte-level calls (DeviceContext::Upload/Download).
  DeviceBuffer& buffer() { return buffer_; }
  const DeviceBuffer& buffer() const { return buffer_; }

 private:
  DeviceVector(DeviceBuffer buffer, size_t size) : buffer_(std::move(buffer)), size_(size) {}

  DeviceBuffer buffer_;
  size_t size_ = 0;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DEVICE_VECTOR_H_
