// TimeCondensationStep: one step of the seed paper's schedule timed on a resident matrix (the
// benchmark's yardstick for the step kernel's bandwidth). Skips without a device.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/condensation_step_timing.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "gtest/gtest.h"
#include "tests/core/cuda_context_test.h"

namespace matrixd::cuda {
namespace {

class CondensationStepTimingTest : public CudaContextTest {
 protected:
  // An m x m float64 matrix on the device: uniform in [-1, 1), or zero when `zero`.
  DeviceBuffer Resident(int64_t m, bool zero = false) {
    std::vector<double> values(static_cast<size_t>(m * m), 0.0);
    std::mt19937_64 rng(static_cast<uint64_t>(m));
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    if (!zero) {
      for (double& x : values) x = uniform(rng);
    }
    return Upload(values.data(), values.size() * sizeof(double));
  }
};

TEST_F(CondensationStepTimingTest, TimesBothKernelsAndCountsTheStepsBytes) {
  const int64_t m = 513;
  const DeviceBuffer matrix = Resident(m);
  absl::StatusOr<CondensationStepTiming> timing = TimeCondensationStep(*context_, matrix, m, 3);
  ASSERT_TRUE(timing.ok()) << timing.status();
  EXPECT_GT(timing->step_seconds, 0.0);
  EXPECT_GT(timing->pivot_row_seconds, 0.0);
  EXPECT_EQ(timing->step_bytes, sizeof(double) * static_cast<uint64_t>(m * m + (m - 1) * (m - 1)));
}

TEST_F(CondensationStepTimingTest, LeavesTheMatrixAsItWas) {
  const int64_t m = 64;
  const DeviceBuffer matrix = Resident(m);
  std::vector<double> before(static_cast<size_t>(m * m));
  std::vector<double> after(before.size());
  ASSERT_TRUE(context_->Download(matrix, before.data(), before.size() * sizeof(double)).ok());
  ASSERT_TRUE(TimeCondensationStep(*context_, matrix, m, 2).ok());
  ASSERT_TRUE(context_->Download(matrix, after.data(), after.size() * sizeof(double)).ok());
  EXPECT_EQ(before, after);
}

TEST_F(CondensationStepTimingTest, ZeroFirstRowIsAFailedPrecondition) {
  const DeviceBuffer matrix = Resident(32, /*zero=*/true);
  EXPECT_EQ(TimeCondensationStep(*context_, matrix, 32, 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CondensationStepTimingTest, OrderBelowTwoOrShortBufferIsInvalid) {
  const DeviceBuffer matrix = Resident(16);
  EXPECT_EQ(TimeCondensationStep(*context_, matrix, 1, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TimeCondensationStep(*context_, matrix, 17, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TimeCondensationStep(*context_, matrix, 16, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace matrixd::cuda
