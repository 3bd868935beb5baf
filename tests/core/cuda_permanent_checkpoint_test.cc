// Checkpointed permanents on the GPU (--state_dir with the CUDA backend): a walk cancelled part-way
// and asked again resumes from its file and gives the uninterrupted value bit for bit, for real,
// complex and exact (INT64) walks; the file goes once the walk completes. Skips where there is no
// CUDA device.
#include <complex>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cuda/cuda_backend.h"
#include "gtest/gtest.h"
#include "tests/core/cancel_at_progress.h"
#include "tests/core/dense_test_support.h"
#include "tests/core/scratch_dir.h"

namespace matrixd {
namespace {

using ::matrixd::testing::FilesIn;
using ::matrixd::testing::FreshDir;

// The permanent on a CUDA backend checkpointing under `dir` (none when empty), cancelled once
// `stop_at` of it is done (never when stop_at >= 1).
absl::StatusOr<PermanentResult> RunUntil(const Matrix& a, const std::string& dir, double stop_at) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = MakeCudaBackend({0}, {}, 1, dir);
  if (!backend.ok()) return backend.status();
  return testing::RunCancellingAt(stop_at, [&](JobControl& control) {
    return (*backend)->Permanent(a.view(), {.method = PermanentMethod::kGlynn}, &control);
  });
}

class CudaPermanentCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: device test skipped";
  }

  // Uninterrupted, stopped at `stop_at`, resumed: the resumed result, which must match.
  void ExpectResumes(const Matrix& a, const std::string& name, double stop_at) {
    const std::string dir = FreshDir(name);
    auto uninterrupted = RunUntil(a, "", 2.0);
    ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.status();

    auto stopped = RunUntil(a, dir, stop_at);
    ASSERT_EQ(stopped.status().code(), absl::StatusCode::kCancelled) << stopped.status();
    ASSERT_EQ(FilesIn(dir), 1);
    EXPECT_GT(std::filesystem::file_size(std::filesystem::directory_iterator(dir)->path()), 100u);

    auto resumed = RunUntil(a, dir, 2.0);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    EXPECT_EQ(resumed->value, uninterrupted->value);  // bit for bit
    EXPECT_EQ(resumed->exact, uninterrupted->exact);
    EXPECT_EQ(FilesIn(dir), 0);  // removed once complete
    std::filesystem::remove_all(dir);
  }
};

TEST_F(CudaPermanentCheckpoint, RealWalkRestartAfterCancelGivesTheUninterruptedValue) {
  ExpectResumes(testing::RandomMatrix<double>(34, 34, 3), "cuda-permanent-real", 0.3);
}

TEST_F(CudaPermanentCheckpoint, ComplexWalkResumes) {
  ExpectResumes(testing::RandomMatrix<std::complex<double>>(34, 34, 4), "cuda-permanent-complex",
                0.4);
}

TEST_F(CudaPermanentCheckpoint, ExactIntegerWalkResumesAcrossPrimes) {
  std::vector<int64_t> values(30 * 30);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i % 7) - 3;
  ExpectResumes(Matrix::FromValues<int64_t>(30, 30, values), "cuda-permanent-int", 0.5);
}

}  // namespace
}  // namespace matrixd
