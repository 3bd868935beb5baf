// CudaContextTest: the fixture the CUDA kernel tests share. Skips the test when no device is
// present; otherwise gives it a DeviceContext on device 0 (`context_`) and the buffer helpers.
// A fixture that needs more in SetUp calls CudaContextTest::SetUp() first and returns when
// IsSkipped() or HasFatalFailure().
#ifndef MATRIXD_TESTS_CORE_CUDA_CONTEXT_TEST_H_
#define MATRIXD_TESTS_CORE_CUDA_CONTEXT_TEST_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {

class CudaContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: CUDA tests skipped";
    absl::StatusOr<std::unique_ptr<DeviceContext>> context = DeviceContext::Create(0);
    ASSERT_TRUE(context.ok()) << context.status();
    context_ = *std::move(context);
  }

  // A device buffer of at least `bytes` (and at least 8: an empty one is refused); an empty
  // DeviceBuffer, with a test failure, when the allocation fails.
  DeviceBuffer Allocate(size_t bytes) {
    absl::StatusOr<DeviceBuffer> buffer = context_->Allocate(std::max<size_t>(bytes, 8));
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    return buffer.ok() ? *std::move(buffer) : DeviceBuffer();
  }
  // A device copy of `bytes` bytes at `data`.
  DeviceBuffer Upload(const void* data, size_t bytes) {
    DeviceBuffer buffer = Allocate(bytes);
    if (buffer.data() != nullptr) {
      EXPECT_TRUE(context_->Upload(data, buffer, bytes).ok());
    }
    return buffer;
  }
  // The first `count` values of `buffer`.
  template <typename V>
  std::vector<V> Download(const DeviceBuffer& buffer, size_t count) {
    std::vector<V> out(count);
    EXPECT_TRUE(context_->Download(buffer, out.data(), count * sizeof(V)).ok());
    return out;
  }

  std::unique_ptr<DeviceContext> context_;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_TESTS_CORE_CUDA_CONTEXT_TEST_H_
