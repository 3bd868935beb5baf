// One process's place in a job spread over R processes with one GPU each, the model cuBLASMp and
// cuSOLVERMp are built for: its CUDA device, a stream, and its rank of one NCCL communicator, plus
// the small collectives the distributed operations need (a barrier, reductions of a few doubles).
// Also the device arrays those operations hold. Everything here is owned, moved never copied.
#ifndef MATRIXD_CORE_MULTI_GPU_NCCL_RANK_H_
#define MATRIXD_CORE_MULTI_GPU_NCCL_RANK_H_

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace matrixd::multi_gpu {

// Device memory of `count` elements of T on the current device, freed on destruction.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(DeviceArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() {
    if (data_ != nullptr) cudaFree(data_);
  }

  // RESOURCE_EXHAUSTED naming the bytes when the device has not enough memory.
  static absl::StatusOr<DeviceArray> Allocate(size_t count);

  T* get() const { return data_; }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

class NcclRank {
 public:
  // Sets `device` as this process's device and joins the communicator `id` names as `rank` of
  // `ranks`. Collective: every rank must call it with the same id and `ranks`. UNAVAILABLE when
  // NCCL fails (a peer missing, no path between the GPUs); INTERNAL for CUDA errors.
  static absl::StatusOr<std::unique_ptr<NcclRank>> Join(const ncclUniqueId& id, int ranks, int rank,
                                                        int device);
  ~NcclRank();
  NcclRank(const NcclRank&) = delete;
  NcclRank& operator=(const NcclRank&) = delete;

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  int device() const { return device_; }
  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_; }

  // Returns once every rank has called it and the work queued on every rank's stream before the
  // call is done (an all-reduce of one value, then a stream synchronisation).
  absl::Status Barrier();

  // The element-wise sum (or max) of `values` over all ranks, through the devices. Collective:
  // every rank passes as many values. REQUIRES: values.size() <= 64.
  absl::StatusOr<std::vector<double>> AllReduce(absl::Span<const double> values, ncclRedOp_t op);

 private:
  NcclRank() = default;

  int rank_ = 0;
  int ranks_ = 1;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  double* scratch_ = nullptr;  // 64 doubles for AllReduce and Barrier
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_NCCL_RANK_H_
