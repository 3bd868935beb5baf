// A typed view of device memory (faiss's DeviceTensor without ownership; std::span for the
// device): a pointer and a count of elements of T. Owns nothing; the memory must outlive it.
// Launchers take spans, so the element type and the extent travel with the pointer.
#ifndef MATRIXD_CORE_CUDA_DEVICE_SPAN_H_
#define MATRIXD_CORE_CUDA_DEVICE_SPAN_H_

#include <cstddef>
#include <type_traits>

#include "core/cuda/device_buffer.h"

namespace matrixd::cuda {

template <typename T>
class DeviceSpan {
 public:
  constexpr DeviceSpan() = default;
  constexpr DeviceSpan(T* data, size_t size) : data_(data), size_(size) {}
  // DeviceSpan<T> converts to DeviceSpan<const T>.
  template <typename U,
            typename = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  constexpr DeviceSpan(DeviceSpan<U> other) : data_(other.data()), size_(other.size()) {}

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr size_t size_bytes() const { return size_ * sizeof(T); }
  constexpr bool empty() const { return size_ == 0; }
  // REQUIRES: offset + count <= size().
  constexpr DeviceSpan subspan(size_t offset, size_t count) const {
    return DeviceSpan(data_ + offset, count);
  }
  constexpr DeviceSpan first(size_t count) const { return DeviceSpan(data_, count); }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

// The whole of `buffer` as elements of T (its bytes / sizeof(T) of them).
template <typename T>
DeviceSpan<T> AsSpan(const DeviceBuffer& buffer) {
  return DeviceSpan<T>(buffer.as<T>(), buffer.bytes() / sizeof(T));
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DEVICE_SPAN_H_
