// Sets a cuBLAS handle's math mode (e.g. TF32 tensor cores for one opted-in product) and restores
// the previous mode on every path out of the scope.
#ifndef MATRIXD_CORE_CUDA_SCOPED_MATH_MODE_H_
#define MATRIXD_CORE_CUDA_SCOPED_MATH_MODE_H_

#include <cublas_v2.h>

#include <utility>

#include "absl/status/statusor.h"
#include "core/cuda/cuda_status.h"

namespace matrixd::cuda {

class ScopedMathMode {
 public:
  static absl::StatusOr<ScopedMathMode> Set(cublasHandle_t handle, cublasMath_t mode) {
    cublasMath_t previous = CUBLAS_DEFAULT_MATH;
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasGetMathMode(handle, &previous));
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetMathMode(handle, mode));
    return ScopedMathMode(handle, previous);
  }
  ScopedMathMode(ScopedMathMode&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), previous_(other.previous_) {}
  ScopedMathMode& operator=(ScopedMathMode&&) = delete;
  ScopedMathMode(const ScopedMathMode&) = delete;
  ScopedMathMode& operator=(const ScopedMathMode&) = delete;
  ~ScopedMathMode() {
    if (handle_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cublasSetMathMode(handle_, previous_));
  }

 private:
  ScopedMathMode(cublasHandle_t handle, cublasMath_t previous)
      : handle_(handle), previous_(previous) {}
  cublasHandle_t handle_;
  cublasMath_t previous_;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_SCOPED_MATH_MODE_H_
