// The MatrixView (core/matrix.h) of a matrix in device memory of the current device: what the
// CUDA backend hands its kernels and checks when it works on its own device copies.
#ifndef MATRIXD_CORE_CUDA_DEVICE_VIEW_H_
#define MATRIXD_CORE_CUDA_DEVICE_VIEW_H_

#include <cstddef>
#include <cstdint>

#include "core/matrix.h"

namespace matrixd::cuda {

// A rows x cols kDevice view of `data`, row-major (device index -1: the caller's device).
inline MatrixView DeviceMatrixView(int64_t rows, int64_t cols, DType dtype, const void* data) {
  return MatrixView{.rows = rows,
                    .cols = cols,
                    .dtype = dtype,
                    .data = static_cast<const std::byte*>(data),
                    .space = MemorySpace::kDevice};
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DEVICE_VIEW_H_
