// Test helpers for CUDA device tests: a host matrix copied into a device buffer of a context, the
// MatrixView of such a copy, and a device buffer copied back. Only where the CUDA backend is built.
#ifndef MATRIXD_TESTS_CORE_DEVICE_COPY_SUPPORT_H_
#define MATRIXD_TESTS_CORE_DEVICE_COPY_SUPPORT_H_

#include <cstdint>
#include <utility>

#include "core/cuda/device_buffer.h"
#include "core/cuda/device_context.h"
#include "core/cuda/device_view.h"
#include "core/matrix.h"
#include "gtest/gtest.h"

namespace matrixd::testing {

// A device copy of x (an empty buffer, with a test failure, if it cannot be made).
inline cuda::DeviceBuffer UploadToDevice(cuda::DeviceContext& context, const Matrix& x) {
  absl::StatusOr<cuda::DeviceBuffer> buffer = context.Allocate(x.byte_size());
  EXPECT_TRUE(buffer.ok()) << buffer.status();
  if (!buffer.ok()) return cuda::DeviceBuffer();
  EXPECT_TRUE(context.Upload(x.bytes(), *buffer, x.byte_size()).ok());
  return *std::move(buffer);
}

// x's shape and dtype over the device copy `buffer`.
inline MatrixView DeviceView(const Matrix& x, const cuda::DeviceBuffer& buffer) {
  return cuda::DeviceMatrixView(x.rows(), x.cols(), x.dtype(), buffer.data());
}

// A rows x cols host matrix of `dtype` read from `buffer`.
inline Matrix DownloadMatrix(cuda::DeviceContext& context, const cuda::DeviceBuffer& buffer,
                             int64_t rows, int64_t cols, DType dtype) {
  Matrix x(rows, cols, dtype);
  EXPECT_TRUE(context.Download(buffer, x.mutable_bytes(), x.byte_size()).ok());
  return x;
}

}  // namespace matrixd::testing

#endif  // MATRIXD_TESTS_CORE_DEVICE_COPY_SUPPORT_H_
