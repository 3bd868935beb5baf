// KernelTimer (core/cuda/kernel_timer.h): events around work on a stream become KernelRecords.
// Skips where there is no CUDA device.
#include <cuda_runtime.h>

#include <memory>

#include "core/cuda/device_context.h"
#include "core/cuda/kernel_timer.h"
#include "core/make_backend.h"
#include "core/operations.h"
#include "gtest/gtest.h"
#include "tests/core/cuda_context_test.h"

namespace matrixd::cuda {
namespace {

constexpr size_t kBytes = size_t{256} << 20;

class KernelTimerTest : public CudaContextTest {
 protected:
  void SetUp() override {
    CudaContextTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    absl::StatusOr<DeviceBuffer> buffer = context_->Allocate(kBytes);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    buffer_ = *std::move(buffer);
  }

  // Times one memset of the buffer and appends it to `stats` as `name`.
  void TimeMemset(ComputeStats* stats, const char* name) {
    absl::StatusOr<KernelTimer> timer = KernelTimer::Start(context_->stream());
    ASSERT_TRUE(timer.ok()) << timer.status();
    ASSERT_EQ(cudaMemsetAsync(buffer_.data(), 1, kBytes, context_->stream()), cudaSuccess);
    ASSERT_TRUE(timer->Stop().ok());
    ASSERT_TRUE(timer->AppendTo(stats, name, kBytes, 0.0).ok());
  }

  DeviceBuffer buffer_;
};

TEST_F(KernelTimerTest, AppendsOneRecordWithNameBytesAndFlops) {
  ComputeStats stats;
  absl::StatusOr<KernelTimer> timer = KernelTimer::Start(context_->stream());
  ASSERT_TRUE(timer.ok()) << timer.status();
  ASSERT_EQ(cudaMemsetAsync(buffer_.data(), 0, kBytes, context_->stream()), cudaSuccess);
  ASSERT_TRUE(timer->Stop().ok());
  ASSERT_TRUE(timer->AppendTo(&stats, "memset", kBytes, 42.0).ok());
  ASSERT_EQ(stats.kernels.size(), 1u);
  EXPECT_EQ(stats.kernels[0].kernel, "memset");
  EXPECT_EQ(stats.kernels[0].bytes, kBytes);
  EXPECT_EQ(stats.kernels[0].flops, 42.0);
}

// A 256 MiB memset takes microseconds to milliseconds on any current GPU, never 0 or seconds.
TEST_F(KernelTimerTest, SecondsAreThoseOfTheWorkBetweenTheEvents) {
  ComputeStats stats;
  TimeMemset(&stats, "memset");
  ASSERT_EQ(stats.kernels.size(), 1u);
  EXPECT_GT(stats.kernels[0].seconds, 0.0);
  EXPECT_LT(stats.kernels[0].seconds, 1.0);
}

TEST_F(KernelTimerTest, RecordsAppendInOrder) {
  ComputeStats stats;
  TimeMemset(&stats, "first");
  TimeMemset(&stats, "second");
  ASSERT_EQ(stats.kernels.size(), 2u);
  EXPECT_EQ(stats.kernels[0].kernel, "first");
  EXPECT_EQ(stats.kernels[1].kernel, "second");
}

// AppendTo waits for the stop event itself: no synchronisation is needed before it.
TEST_F(KernelTimerTest, AppendToWaitsForTheStream) {
  ComputeStats stats;
  TimeMemset(&stats, "memset");
  EXPECT_EQ(cudaStreamQuery(context_->stream()), cudaSuccess);
}

}  // namespace
}  // namespace matrixd::cuda
