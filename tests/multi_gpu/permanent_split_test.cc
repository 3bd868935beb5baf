// The CUDA permanent with its walk split into shares over several contexts (core/cuda/permanent.h):
// the value equals the one-context walk's to double-double rounding, for every share count, on
// one GPU (several contexts of device 0) and on every prefix of the GPUs, for every dtype (INT64
// exactly); a split complex walk cancelled part-way resumes from its checkpoint to the
// uninterrupted split value bit for bit. Skips without a device.
#include <cuda_runtime.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cuda/device_context.h"
#include "core/cuda/permanent.h"
#include "gtest/gtest.h"
#include "tests/core/cancel_at_progress.h"
#include "tests/core/dense_test_support.h"
#include "tests/core/scratch_dir.h"

namespace matrixd::cuda {
namespace {

int DeviceCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

// n x n float64 with entries k / 2^20, k uniform in [lo, 2^20).
Matrix GridMatrix(int n, int64_t lo, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int64_t> k(lo, (int64_t{1} << 20) - 1);
  Matrix m(n, n, DType::kFloat64);
  for (double& x : m.As<double>()) x = std::ldexp(static_cast<double>(k(random)), -20);
  return m;
}

absl::StatusOr<PermanentResult> Split(const Matrix& a, const std::vector<int>& devices,
                                      const PermanentOptions& options = {},
                                      const std::string& state_dir = {}, double stop_at = 2.0) {
  std::vector<std::unique_ptr<DeviceContext>> owned;
  std::vector<DeviceContext*> contexts;
  for (int device : devices) {
    absl::StatusOr<std::unique_ptr<DeviceContext>> context = DeviceContext::Create(device);
    if (!context.ok()) return context.status();
    contexts.push_back(context->get());
    owned.push_back(*std::move(context));
  }
  return testing::RunCancellingAt(stop_at, [&](JobControl& control) {
    return Permanent(a.view(), options, contexts, &control, state_dir);
  });
}

// The GPUs a split runs on: 0 and 1 where there are two, else two contexts of GPU 0.
std::vector<int> TwoShares() {
  return DeviceCount() >= 2 ? std::vector<int>{0, 1} : std::vector<int>{0, 0};
}

TEST(PermanentSplit, SharesOnOneGpuGiveTheOneContextValue) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  for (const int64_t lo : {int64_t{0}, -(int64_t{1} << 20) + 1}) {
    const Matrix a = GridMatrix(22, lo, 7);
    absl::StatusOr<PermanentResult> whole = Split(a, {0});
    ASSERT_TRUE(whole.ok()) << whole.status();
    for (const int shares : {2, 3, 5}) {
      absl::StatusOr<PermanentResult> split = Split(a, std::vector<int>(shares, 0));
      ASSERT_TRUE(split.ok()) << split.status();
      EXPECT_NEAR(split->value.real(), whole->value.real(),
                  1e-15 * std::abs(whole->value.real()) + 1e-300)
          << shares << " shares, entries from " << lo;
      EXPECT_EQ(split->precision_used, whole->precision_used);
    }
  }
}

TEST(PermanentSplit, EveryPrefixOfTheGpusAndBothPrecisions) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  const Matrix a = GridMatrix(24, 0, 11);
  for (const PermanentPrecision precision :
       {PermanentPrecision::kExtended, PermanentPrecision::kFast}) {
    const PermanentOptions options{.method = PermanentMethod::kGlynn, .precision = precision};
    absl::StatusOr<PermanentResult> whole = Split(a, {0}, options);
    ASSERT_TRUE(whole.ok()) << whole.status();
    for (int gpus = 2; gpus <= devices; ++gpus) {
      std::vector<int> ordinals;
      for (int d = 0; d < gpus; ++d) ordinals.push_back(d);
      absl::StatusOr<PermanentResult> split = Split(a, ordinals, options);
      ASSERT_TRUE(split.ok()) << split.status();
      EXPECT_NEAR(split->value.real(), whole->value.real(), 1e-13 * std::abs(whole->value.real()))
          << gpus << " GPUs";
    }
  }
}

TEST(PermanentSplit, EveryDtypeOverTwoSharesGivesTheOneGpuValue) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const int n = 20;
  std::vector<int64_t> integers(n * n);
  for (size_t i = 0; i < integers.size(); ++i) integers[i] = static_cast<int64_t>(i % 7) - 3;
  const std::vector<Matrix> matrices = {testing::RandomMatrix<float>(n, n, 1),
                                        testing::RandomMatrix<double>(n, n, 2),
                                        testing::RandomMatrix<std::complex<float>>(n, n, 3),
                                        testing::RandomMatrix<std::complex<double>>(n, n, 4),
                                        Matrix::FromValues<int64_t>(n, n, integers)};
  for (const Matrix& a : matrices) {
    for (const PermanentMethod method : {PermanentMethod::kGlynn, PermanentMethod::kRyser}) {
      const PermanentOptions options{.method = method};
      absl::StatusOr<PermanentResult> whole = Split(a, {0}, options);
      ASSERT_TRUE(whole.ok()) << whole.status();
      absl::StatusOr<PermanentResult> split = Split(a, TwoShares(), options);
      ASSERT_TRUE(split.ok()) << DTypeName(a.dtype()) << ": " << split.status();
      const std::string where = std::string(DTypeName(a.dtype())) +
                                (method == PermanentMethod::kGlynn ? " glynn" : " ryser");
      // The shares' double-double sums are added once more than the whole walk's: equal after
      // the rounding to double but for a last-bit tie.
      EXPECT_LE(std::abs(split->value - whole->value), 1e-15 * std::abs(whole->value)) << where;
      EXPECT_EQ(split->exact, whole->exact) << where;  // INT64: exact; others: empty
    }
  }
}

TEST(PermanentSplit, ASplitComplexWalkResumesFromItsCheckpoint) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const Matrix a = testing::RandomMatrix<std::complex<double>>(36, 36, 9);
  const PermanentOptions options{.method = PermanentMethod::kGlynn};
  absl::StatusOr<PermanentResult> uninterrupted = Split(a, TwoShares(), options);
  ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.status();
  const std::string dir = testing::FreshDir("permanent-split-complex");
  absl::StatusOr<PermanentResult> stopped = Split(a, TwoShares(), options, dir, 0.4);
  ASSERT_EQ(stopped.status().code(), absl::StatusCode::kCancelled) << stopped.status();
  ASSERT_EQ(testing::FilesIn(dir), 1);
  absl::StatusOr<PermanentResult> resumed = Split(a, TwoShares(), options, dir);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->value, uninterrupted->value);  // bit for bit
  EXPECT_EQ(testing::FilesIn(dir), 0);              // removed once complete
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace matrixd::cuda
