// Several streams per device: DeviceStreams lends each context to one operation at a time, and the
// CUDA backend really runs operations side by side (a small determinant finishes while a long
// permanent holds another stream) with correct results under concurrency. Skips where there is
// no CUDA device.
#include <atomic>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/backend.h"
#include "core/cpu/cpu_backend.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_streams.h"
#include "core/job_control.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"

namespace matrixd {
namespace {

using testing::RandomMatrix;

class CudaStreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: device test skipped";
  }
};

TEST_F(CudaStreamsTest, LendsEachContextToOneHolderAtATime) {
  absl::StatusOr<std::unique_ptr<cuda::DeviceStreams>> streams =
      cuda::DeviceStreams::Create(0, 2, {});
  ASSERT_TRUE(streams.ok()) << streams.status();
  EXPECT_EQ((*streams)->streams(), 2);
  EXPECT_EQ(cuda::DeviceStreams::Create(0, 0, {}).status().code(),
            absl::StatusCode::kInvalidArgument);

  auto first = std::make_unique<cuda::DeviceStreams::Lease>((*streams)->Acquire());
  const cuda::DeviceStreams::Lease second = (*streams)->Acquire();
  EXPECT_NE(first->context().stream(), second.context().stream());
  EXPECT_NE(first->context().cublas(), second.context().cublas());
  EXPECT_EQ((*streams)->busy(), 2);

  // A third holder waits until one is returned.
  absl::Notification acquired;
  std::thread third([&] {
    const cuda::DeviceStreams::Lease lease = (*streams)->Acquire();
    acquired.Notify();
  });
  EXPECT_FALSE(acquired.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  first.reset();
  EXPECT_TRUE(acquired.WaitForNotificationWithTimeout(absl::Seconds(10)));
  third.join();
  EXPECT_EQ((*streams)->busy(), 1);
}

TEST_F(CudaStreamsTest, SmallOperationFinishesWhileALongOneHoldsAnotherStream) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = MakeCudaBackend({0}, {}, 2);
  ASSERT_TRUE(backend.ok()) << backend.status();

  // A real Glynn permanent of n = 40 runs for minutes on an H100: it is still running when the
  // determinant is done, unless the two were serialised.
  const Matrix long_input = RandomMatrix<double>(40, 40, 1);
  JobControl long_control;
  std::atomic<bool> long_done{false};
  absl::Status long_status;
  std::thread long_job([&] {
    long_status = (*backend)->Permanent(long_input.view(), {}, &long_control).status();
    long_done = true;
  });
  // Wait until the permanent has started on the device (it reports progress per slice).
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (long_control.progress() == 0.0 && !long_done && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_FALSE(long_done) << long_status;

  const Matrix small = RandomMatrix<double>(64, 64, 2);
  const absl::Time start = absl::Now();
  absl::StatusOr<DeterminantResult> det = (*backend)->Determinant(small.view(), {}, nullptr);
  const absl::Duration small_took = absl::Now() - start;
  const bool long_still_running = !long_done;
  long_control.Cancel();
  long_job.join();

  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_TRUE(long_still_running) << "the determinant waited for the permanent";
  EXPECT_LT(small_took, absl::Seconds(2));
  EXPECT_EQ(long_status.code(), absl::StatusCode::kCancelled) << long_status;
}

TEST_F(CudaStreamsTest, ConcurrentOperationsGiveTheSameResultsAsTheCpu) {
  absl::StatusOr<std::unique_ptr<Backend>> gpu = MakeCudaBackend({}, {}, 4);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  absl::StatusOr<std::unique_ptr<Backend>> cpu = MakeCpuBackend({.threads = 1});
  ASSERT_TRUE(cpu.ok()) << cpu.status();

  constexpr int kThreads = 6;
  constexpr int kPerThread = 8;
  std::vector<Matrix> inputs;
  std::vector<double> expected;
  for (int i = 0; i < kThreads * kPerThread; ++i) {
    inputs.push_back(RandomMatrix<double>(96 + i, 96 + i, 100 + i));
    absl::StatusOr<DeterminantResult> det = (*cpu)->Determinant(inputs.back().view(), {}, nullptr);
    ASSERT_TRUE(det.ok()) << det.status();
    expected.push_back(det->value.log_abs());
  }
  std::vector<double> got(inputs.size(), NAN);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kPerThread; ++k) {
        const size_t i = static_cast<size_t>(t * kPerThread + k);
        absl::StatusOr<DeterminantResult> det = (*gpu)->Determinant(inputs[i].view(), {}, nullptr);
        if (det.ok()) got[i] = det->value.log_abs();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-9 * std::max(1.0, std::abs(expected[i]))) << "matrix " << i;
  }
}

}  // namespace
}  // namespace matrixd
