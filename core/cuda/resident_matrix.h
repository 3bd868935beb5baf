// The CUDA backend's resident matrices: device memory from the device's stream-ordered pool,
// filled and read through a transfer context of their own (a stream with pinned staging), so that
// uploads and downloads do not wait for a compute stream. Spilled matrices move to host memory.
#ifndef MATRIXD_CORE_CUDA_RESIDENT_MATRIX_H_
#define MATRIXD_CORE_CUDA_RESIDENT_MATRIX_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/cuda/device_context.h"
#include "core/resident_matrix.h"
#include "core/status_macros.h"

namespace matrixd::cuda {

// The context that moves resident matrices in and out of one device, shared by all of that
// device's resident matrices; one transfer at a time. Thread-safe.
class TransferChannel {
 public:
  TransferChannel(std::unique_ptr<DeviceContext> context, int device_index, std::string description)
      : context_(std::move(context)),
        device_index_(device_index),
        description_(std::move(description)) {}

  int device_index() const { return device_index_; }
  const std::string& description() const { return description_; }

  // Runs `transfer` with the channel's context, its device current, one caller at a time.
  template <typename Transfer>
  absl::Status Run(Transfer&& transfer) {
    absl::MutexLock lock(&mutex_);
    MATRIXD_RETURN_IF_ERROR(context_->Activate());
    return transfer(*context_);
  }

 private:
  absl::Mutex mutex_;
  const std::unique_ptr<DeviceContext> context_ ABSL_PT_GUARDED_BY(mutex_);
  const int device_index_;
  const std::string description_;
};

// A rows x cols matrix in `channel`'s device memory, contents unspecified. RESOURCE_EXHAUSTED
// naming the sizes when the device's pool has no room. `channel` must outlive the matrix.
absl::StatusOr<std::unique_ptr<ResidentMatrix>> MakeDeviceResidentMatrix(TransferChannel& channel,
                                                                         int64_t rows, int64_t cols,
                                                                         DType dtype);

// The device address of `output` when a result of `bytes` of `dtype` can be written there by
// `context` (the operations' resident output, e.g. MultiplyOptions::output): a resident matrix of
// that size and dtype on this context's device, not spilled. Null otherwise (or for null output).
void* InPlaceOutput(ResidentMatrix* output, size_t bytes, DType dtype,
                    const DeviceContext& context);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_RESIDENT_MATRIX_H_
