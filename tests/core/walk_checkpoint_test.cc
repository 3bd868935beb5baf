// Checkpointed permanents: a walk stopped part-way and asked again resumes from its file and gives
// the uninterrupted value bit for bit; the file goes once the walk completes.
#include "core/walk_checkpoint.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/cpu/permanent.h"
#include "gtest/gtest.h"
#include "tests/core/cancel_at_progress.h"
#include "tests/core/dense_test_support.h"
#include "tests/core/scratch_dir.h"

namespace matrixd {
namespace {

using ::matrixd::testing::FilesIn;
using ::matrixd::testing::FreshDir;

TEST(WalkCheckpoint, RecordsSurviveReopenAndOtherWalksStartAfresh) {
  const std::string dir = FreshDir("walk-reopen");
  const double sum = 1.25;
  {
    auto checkpoint = WalkCheckpoint::Open(dir, 7, 4, sizeof(double));
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    EXPECT_EQ((*checkpoint)->resumed_chunks(), 0);
    ASSERT_TRUE((*checkpoint)->Record(2, std::as_bytes(std::span<const double, 1>(&sum, 1))).ok());
  }
  {
    auto checkpoint = WalkCheckpoint::Open(dir, 7, 4, sizeof(double));
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    EXPECT_EQ((*checkpoint)->resumed_chunks(), 1);
    EXPECT_TRUE((*checkpoint)->done(2));
    EXPECT_FALSE((*checkpoint)->done(1));
    double loaded = 0;
    (*checkpoint)->Load(2, std::as_writable_bytes(std::span<double, 1>(&loaded, 1)));
    EXPECT_EQ(loaded, sum);
  }
  auto other_shape = WalkCheckpoint::Open(dir, 7, 8, sizeof(double));
  ASSERT_TRUE(other_shape.ok());
  EXPECT_EQ((*other_shape)->resumed_chunks(), 0);
  std::filesystem::remove_all(dir);
}

// Runs the permanent, cancelling it once `stop_at` of it is done (never when stop_at >= 1).
absl::StatusOr<PermanentResult> RunUntil(const Matrix& a, const std::string& dir, double stop_at) {
  return testing::RunCancellingAt(stop_at, [&](JobControl& control) {
    return cpu::Permanent(a.view(), {.method = PermanentMethod::kGlynn}, 2, &control, dir);
  });
}

TEST(PermanentCheckpoint, RestartAfterCancelGivesTheUninterruptedValue) {
  const std::string dir = FreshDir("permanent-resume");
  const Matrix a = testing::RandomMatrix<double>(24, 24, 3);
  auto uninterrupted = RunUntil(a, "", 2.0);
  ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.status();

  auto stopped = RunUntil(a, dir, 0.3);
  ASSERT_EQ(stopped.status().code(), absl::StatusCode::kCancelled) << stopped.status();
  ASSERT_EQ(FilesIn(dir), 1);
  EXPECT_GT(std::filesystem::file_size(std::filesystem::directory_iterator(dir)->path()), 100u);

  auto resumed = RunUntil(a, dir, 2.0);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->value, uninterrupted->value);  // bit for bit
  EXPECT_EQ(FilesIn(dir), 0);                       // removed once complete
  std::filesystem::remove_all(dir);
}

TEST(PermanentCheckpoint, ExactIntegerPermanentResumes) {
  const std::string dir = FreshDir("permanent-resume-int");
  std::vector<int64_t> values(22 * 22);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i % 7) - 3;
  const Matrix a = Matrix::FromValues<int64_t>(22, 22, values);
  auto uninterrupted = RunUntil(a, "", 2.0);
  ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.status();
  auto stopped = RunUntil(a, dir, 0.4);
  ASSERT_EQ(stopped.status().code(), absl::StatusCode::kCancelled) << stopped.status();
  auto resumed = RunUntil(a, dir, 2.0);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->exact, uninterrupted->exact);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace matrixd
