// The CUDA permanent with its walk split into shares over several contexts (core/cuda/permanent.h):
// the value equals the one-context walk's to double-double rounding, for every share count, on
// one GPU (several contexts of device 0) and on every prefix of the GPUs. Skips without a device.
#include <cuda_runtime.h>

#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cuda/device_context.h"
#include "core/cuda/permanent.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

using ::testing::HasSubstr;

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
                                      const PermanentOptions& options = {}) {
  std::vector<std::unique_ptr<DeviceContext>> owned;
  std::vector<DeviceContext*> contexts;
  for (int device : devices) {
    absl::StatusOr<std::unique_ptr<DeviceContext>> context = DeviceContext::Create(device);
    if (!context.ok()) return context.status();
    contexts.push_back(context->get());
    owned.push_back(*std::move(context));
  }
  JobControl control;
  return Permanent(a.view(), options, contexts, &control);
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

TEST(PermanentSplit, OtherDtypesAreRefusedOverSeveralContexts) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  Matrix a(4, 4, DType::kInt64);
  for (int64_t& x : a.As<int64_t>()) x = 1;
  absl::StatusOr<PermanentResult> split = Split(a, {0, 0});
  EXPECT_EQ(split.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(split.status().message()), HasSubstr("matrix.dtype is int64"));
}

}  // namespace
}  // namespace matrixd::cuda
