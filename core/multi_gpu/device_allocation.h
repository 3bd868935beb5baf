// Device memory of one GPU among several in one process: `count` elements of T on CUDA device
// `device`, freed on that device on destruction (whatever device is current then). Moved, never
// copied. The multi-GPU LU keeps its parts, panels and workspaces in these.
#ifndef MATRIXD_CORE_MULTI_GPU_DEVICE_ALLOCATION_H_
#define MATRIXD_CORE_MULTI_GPU_DEVICE_ALLOCATION_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"

namespace matrixd::multi_gpu {

template <typename T>
class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  DeviceAllocation(DeviceAllocation&& other) noexcept
      : device_(other.device_),
        data_(std::exchange(other.data_, nullptr)),
        count_(std::exchange(other.count_, 0)) {}
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept {
    std::swap(device_, other.device_);
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
  ~DeviceAllocation() {
    if (data_ == nullptr) return;
    int current = 0;
    const bool restore = cudaGetDevice(&current) == cudaSuccess;
    MATRIXD_ASSERT_CUDA_SUCCESS(cudaSetDevice(device_));
    MATRIXD_ASSERT_CUDA_SUCCESS(cudaFree(data_));
    if (restore) cudaSetDevice(current);
  }

  // Makes `device` current and allocates at least one element there (so that every part has a
  // valid pointer). RESOURCE_EXHAUSTED naming the device and the bytes when it has not enough
  // memory; INTERNAL for other CUDA errors.
  static absl::StatusOr<DeviceAllocation> Allocate(int device, size_t count) {
    DeviceAllocation allocation;
    allocation.device_ = device;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    const size_t elements = count > 0 ? count : 1;
    const cudaError_t code = cudaMalloc(&allocation.data_, elements * sizeof(T));
    if (code == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: later launch checks must not see it
      allocation.data_ = nullptr;
      return absl::ResourceExhaustedError(absl::StrCat("cudaMalloc of ", elements * sizeof(T),
                                                       " bytes on GPU ", device,
                                                       ": out of device memory"));
    }
    MATRIXD_CUDA_RETURN_IF_ERROR(code);
    allocation.count_ = elements;
    return allocation;
  }

  int device() const { return device_; }
  T* get() const { return data_; }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  int device_ = 0;
  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_DEVICE_ALLOCATION_H_
