// The device estimator's fused kernels (core/cuda/condition_kernels.h) against host references:
// the solve summary (norms, signs and sign products in one launch) for blocks of 1 to 3 columns,
// its products equal to LaunchEstimateSignProducts on the signs it wrote, and the largest rows
// ranked from x itself. Skips where there is no CUDA device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "core/cuda/condition_kernels.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "gtest/gtest.h"
#include "tests/core/cuda_context_test.h"

namespace matrixd::cuda {
namespace {

class CudaConditionKernels : public CudaContextTest {
 protected:
};

// n x t column-major entries uniform in [-1, 1], some exact zeros (sign +1).
std::vector<double> RandomBlock(int64_t n, int t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> x(static_cast<size_t>(n * t));
  for (size_t k = 0; k < x.size(); ++k) x[k] = k % 7 == 3 ? 0.0 : uniform(rng);
  return x;
}

TEST_F(CudaConditionKernels, SolveSummaryMatchesHostNormsSignsAndProducts) {
  for (const int64_t n : {1, 5, 1000, 4099}) {
    for (int t = 1; t <= 3; ++t) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " t=" << t);
      const std::vector<double> x = RandomBlock(n, t, 7 + n + t);
      std::vector<double> s_old = RandomBlock(n, t, 70 + n + t);
      for (double& v : s_old) v = v >= 0.0 ? 1.0 : -1.0;
      const size_t bytes = x.size() * sizeof(double);
      DeviceBuffer dx = Upload(x.data(), bytes);
      DeviceBuffer ds_old = Upload(s_old.data(), bytes);
      absl::StatusOr<DeviceBuffer> ds = context_->Allocate(bytes);
      absl::StatusOr<DeviceBuffer> summary =
          context_->Allocate((kMaxEstimateRanked + 2 * 4 * 4) * sizeof(double));
      absl::StatusOr<DeviceBuffer> separate = context_->Allocate(2 * 4 * 4 * sizeof(double));
      ASSERT_TRUE(ds.ok() && summary.ok() && separate.ok());
      double* norms = summary->as<double>();
      double* products = norms + 4;
      ASSERT_EQ(LaunchEstimateSolveSummary(dx.as<const double>(), ds_old.as<const double>(), n, t,
                                           norms, ds->as<double>(), products, context_->stream()),
                cudaSuccess);
      ASSERT_EQ(LaunchEstimateSignProducts(ds->as<const double>(), ds_old.as<const double>(), n, t,
                                           separate->as<double>(), context_->stream()),
                cudaSuccess);
      const std::vector<double> got = Download<double>(*summary, 4 + 2 * t * t);
      const std::vector<double> signs = Download<double>(*ds, x.size());
      const std::vector<double> products_separately = Download<double>(*separate, 2 * t * t);

      std::vector<double> s(x.size());
      for (size_t k = 0; k < x.size(); ++k) s[k] = x[k] >= 0.0 ? 1.0 : -1.0;
      EXPECT_EQ(signs, s);
      for (int j = 0; j < t; ++j) {
        double norm = 0.0;
        for (int64_t i = 0; i < n; ++i) norm += std::abs(x[j * n + i]);
        EXPECT_NEAR(got[j], norm, 1e-12 * norm);
      }
      for (int i = 0; i < t; ++i) {
        for (int j = 0; j < t; ++j) {
          double old_product = 0.0;
          double product = 0.0;
          for (int64_t r = 0; r < n; ++r) {
            old_product += s[i * n + r] * s_old[j * n + r];
            product += s[i * n + r] * s[j * n + r];
          }
          EXPECT_EQ(got[4 + i * t + j], old_product) << i << "," << j;
          EXPECT_EQ(got[4 + t * t + i * t + j], product) << i << "," << j;
          EXPECT_EQ(products_separately[i * t + j], old_product);
          EXPECT_EQ(products_separately[t * t + i * t + j], product);
        }
      }
    }
  }
}

TEST_F(CudaConditionKernels, LargestRowsRankedFromTheBlockItself) {
  const int64_t n = 3000;
  const int t = 2;
  std::vector<double> x = RandomBlock(n, t, 99);
  x[17] = 5.0;               // the largest h
  x[n + 40] = -5.0;          // ties with it: the lower row (17) first
  x[n + 41] = std::nan("");  // NaN ranks below every number
  DeviceBuffer dx = Upload(x.data(), x.size() * sizeof(double));
  const int count = 6;
  absl::StatusOr<DeviceBuffer> values = context_->Allocate(kMaxEstimateRanked * sizeof(double));
  absl::StatusOr<DeviceBuffer> rows = context_->Allocate(kMaxEstimateRanked * sizeof(int64_t));
  absl::StatusOr<DeviceBuffer> at = context_->Allocate(4 * sizeof(double));
  ASSERT_TRUE(values.ok() && rows.ok() && at.ok());
  EstimateRows at_rows;
  at_rows.row[0] = 40;
  at_rows.row[1] = 2999;
  at_rows.count = 2;
  ASSERT_EQ(
      LaunchEstimateLargestRows(dx.as<const double>(), n, t, count, at_rows, values->as<double>(),
                                rows->as<int64_t>(), at->as<double>(), context_->stream()),
      cudaSuccess);
  const std::vector<double> got_values = Download<double>(*values, count);
  const std::vector<int64_t> got_rows = Download<int64_t>(*rows, count);
  const std::vector<double> got_at = Download<double>(*at, 2);

  struct Row {
    double value;
    int64_t row;
  };
  std::vector<Row> h(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double a = std::abs(x[i]);
    const double b = std::abs(x[n + i]);
    h[i] = {std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b), i};
  }
  const auto key = [](double v) { return std::isnan(v) ? -1.0 : v; };
  std::stable_sort(h.begin(), h.end(), [&](const Row& a, const Row& b) {
    return key(a.value) != key(b.value) ? key(a.value) > key(b.value) : a.row < b.row;
  });
  EXPECT_EQ(got_rows[0], 17);
  EXPECT_EQ(got_rows[1], 40);
  for (int r = 0; r < count; ++r) {
    EXPECT_EQ(got_rows[r], h[r].row) << r;
    EXPECT_EQ(got_values[r], h[r].value) << r;
  }
  EXPECT_EQ(got_at[0], 5.0);
  EXPECT_EQ(got_at[1], std::max(std::abs(x[2999]), std::abs(x[n + 2999])));
}

}  // namespace
}  // namespace matrixd::cuda
