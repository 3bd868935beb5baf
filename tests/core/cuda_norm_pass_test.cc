// ||A||_1's column sums taken by the pass that brings A into a factorization's layout
// (core/cuda/norm_kernels.h, core/cuda/dense_kernels.h), so that no kernel reads A again for them:
// - LaunchTransposeWithAbsSums (LU Factorize's transpose): dst the exact transpose, the sums within
//   a few roundings of a long double reference and the same bits run after run, NaN and Inf
//   passed on; every element type, shapes from 1 x 1 to several strips of tiles, ragged edges.
// - LaunchScaleRows with row sums (the LU determinant's scaling): the same bits as
//   LaunchColumnAbsSums over the scaled copy read column-major, the copy and the summary the same
//   bits as without the sums, the sums close to a long double reference; every source type, rows
//   of very different magnitudes, a zero row, orders 1 to 700.
// Skips where there is no CUDA device.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/dense_kernels.h"
#include "core/cuda/device_context.h"
#include "core/cuda/norm_kernels.h"
#include "gtest/gtest.h"
#include "tests/core/cuda_context_test.h"

namespace matrixd::cuda {
namespace {

template <typename T>
T Random(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(uniform(rng));
  } else {
    using R = typename T::value_type;
    const R re = static_cast<R>(uniform(rng));
    return T(re, static_cast<R>(uniform(rng)));
  }
}

template <typename T>
long double MagnitudeOf(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fabs(static_cast<long double>(v));
  } else {
    return std::hypot(static_cast<long double>(v.real()), static_cast<long double>(v.imag()));
  }
}

class CudaNormPassTest : public CudaContextTest {
 protected:
};

// ---- The transpose ----

template <typename T>
class CudaTransposeAbsSums : public CudaNormPassTest {
 protected:
  struct Run {
    std::vector<T> dst;
    std::vector<double> sums;
  };

  // src column-major rows x cols (leading dimension rows + 3, the gap never read).
  Run TransposeWithSums(const std::vector<T>& src, int64_t rows, int64_t cols) {
    Run run;
    const int64_t src_ld = rows + 3;
    DeviceBuffer d_src = this->Allocate(src.size() * sizeof(T));
    DeviceBuffer d_dst = this->Allocate(static_cast<size_t>(rows * cols) * sizeof(T));
    DeviceBuffer partials = this->Allocate(TransposeSumPartials(rows, cols) * sizeof(double));
    DeviceBuffer sums = this->Allocate(static_cast<size_t>(rows) * sizeof(double));
    EXPECT_TRUE(this->context_->Upload(src.data(), d_src, src.size() * sizeof(T)).ok());
    EXPECT_EQ(LaunchTransposeWithAbsSums(d_src.as<const T>(), rows, cols, src_ld, d_dst.as<T>(),
                                         cols, partials.as<double>(), sums.as<double>(),
                                         this->context_->stream()),
              cudaSuccess);
    run.dst.resize(static_cast<size_t>(rows * cols));
    run.sums.resize(static_cast<size_t>(rows));
    EXPECT_TRUE(this->context_->Download(d_dst, run.dst.data(), run.dst.size() * sizeof(T)).ok());
    EXPECT_TRUE(
        this->context_->Download(sums, run.sums.data(), run.sums.size() * sizeof(double)).ok());
    return run;
  }
};

using ElementTypes = ::testing::Types<float, double, std::complex<float>, std::complex<double>>;
TYPED_TEST_SUITE(CudaTransposeAbsSums, ElementTypes);

TYPED_TEST(CudaTransposeAbsSums, TransposesExactlyAndSumsEachRow) {
  using T = TypeParam;
  // 2100 columns: 9 strips of 8 tiles, the last ragged; 4099 rows: a ragged last row of tiles.
  const int64_t shapes[][2] = {{1, 1}, {1, 700}, {700, 1}, {33, 65}, {300, 2100}, {4099, 37}};
  for (const auto& shape : shapes) {
    const int64_t rows = shape[0];
    const int64_t cols = shape[1];
    SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
    std::mt19937_64 rng(rows * 7919 + cols);
    const int64_t src_ld = rows + 3;
    std::vector<T> src(static_cast<size_t>(src_ld * cols));
    for (T& v : src) v = Random<T>(rng);
    const typename TestFixture::Run run = this->TransposeWithSums(src, rows, cols);
    for (int64_t i = 0; i < rows; ++i) {
      long double reference = 0.0L;
      for (int64_t j = 0; j < cols; ++j) {
        const T expected = src[static_cast<size_t>(i + j * src_ld)];
        ASSERT_EQ(std::memcmp(&run.dst[static_cast<size_t>(j + i * cols)], &expected, sizeof(T)), 0)
            << "dst(" << j << ", " << i << ")";
        reference += MagnitudeOf(expected);
      }
      // Positive terms added in double, (cols - 1) u relative at worst, each complex modulus
      // within 2 ulps (CUDA's hypot): (cols + 4) u, u = 2^-53, with room to spare.
      EXPECT_NEAR(run.sums[i], static_cast<double>(reference),
                  (2.0 * cols + 8.0) * 0x1p-53 * static_cast<double>(reference))
          << "row " << i;
    }
    const typename TestFixture::Run again = this->TransposeWithSums(src, rows, cols);
    EXPECT_EQ(std::memcmp(run.sums.data(), again.sums.data(), run.sums.size() * sizeof(double)), 0);
  }
}

TYPED_TEST(CudaTransposeAbsSums, NanAndInfinityReachTheirRowsSumsOnly) {
  using T = TypeParam;
  const int64_t rows = 70;
  const int64_t cols = 600;
  std::mt19937_64 rng(5);
  std::vector<T> src(static_cast<size_t>((rows + 3) * cols));
  for (T& v : src) v = Random<T>(rng);
  src[static_cast<size_t>(4 + 333 * (rows + 3))] = T(NAN);
  src[static_cast<size_t>(65 + 599 * (rows + 3))] = T(INFINITY);
  const typename TestFixture::Run run = this->TransposeWithSums(src, rows, cols);
  for (int64_t i = 0; i < rows; ++i) {
    if (i == 4) {
      EXPECT_TRUE(std::isnan(run.sums[i]));
    } else if (i == 65) {
      EXPECT_TRUE(std::isinf(run.sums[i]));
    } else {
      EXPECT_TRUE(std::isfinite(run.sums[i])) << "row " << i;
    }
  }
}

// ---- The determinant's row scaling ----

template <typename S>
using WideOf = std::conditional_t<std::is_same_v<S, std::complex<float>> ||
                                      std::is_same_v<S, std::complex<double>>,
                                  std::complex<double>, double>;

// rows x cols row-major entries; row r scaled by 2^(37 r mod 1201 - 600) for the floating types
// (values from 1e-180 to 1e180), row 1 all zeros when there are at least 3 rows.
template <typename S>
std::vector<S> Entries(int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<S> a(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const int exponent = static_cast<int>((37 * r) % 1201) - 600;
    for (int64_t c = 0; c < cols; ++c) {
      S& v = a[static_cast<size_t>(r * cols + c)];
      if (rows >= 3 && r == 1) {
        v = S{};
      } else if constexpr (std::is_same_v<S, int64_t>) {
        v = static_cast<int64_t>(uniform(rng) * 1e15);
      } else if constexpr (std::is_same_v<S, float>) {
        v = static_cast<float>(std::ldexp(uniform(rng), exponent % 100));
      } else if constexpr (std::is_same_v<S, double>) {
        v = std::ldexp(uniform(rng), exponent);
      } else {
        using R = typename S::value_type;
        const int e = std::is_same_v<R, float> ? exponent % 100 : exponent;
        v = S(static_cast<R>(std::ldexp(uniform(rng), e)),
              static_cast<R>(std::ldexp(uniform(rng), e)));
      }
    }
  }
  return a;
}

template <typename S>
class CudaScaleRows : public CudaNormPassTest {};

using SourceTypes =
    ::testing::Types<float, double, int64_t, std::complex<float>, std::complex<double>>;
TYPED_TEST_SUITE(CudaScaleRows, SourceTypes);

TYPED_TEST(CudaScaleRows, RowSumsAreTheColumnSumsOfTheScaledCopy) {
  using S = TypeParam;
  using W = WideOf<S>;
  const int64_t shapes[][2] = {{1, 1}, {3, 1}, {1, 700}, {5, 257}, {300, 255}, {64, 513}};
  for (const auto& shape : shapes) {
    const int64_t rows = shape[0];
    const int64_t cols = shape[1];
    SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
    const std::vector<S> a = Entries<S>(rows, cols, 11 + rows * cols);
    const size_t elements = a.size();
    DeviceBuffer source = this->Allocate(elements * sizeof(S));
    ASSERT_TRUE(this->context_->Upload(a.data(), source, elements * sizeof(S)).ok());
    DeviceBuffer with_sums = this->Allocate(elements * sizeof(W));
    DeviceBuffer without = this->Allocate(elements * sizeof(W));
    DeviceBuffer summaries = this->Allocate(2 * sizeof(DeterminantSummary));
    DeviceBuffer row_sums = this->Allocate(rows * sizeof(double));
    DeviceBuffer column_sums = this->Allocate(rows * sizeof(double));
    const cudaStream_t stream = this->context_->stream();
    ASSERT_EQ(cudaMemsetAsync(summaries.data(), 0, 2 * sizeof(DeterminantSummary), stream),
              cudaSuccess);
    auto* summary = summaries.as<DeterminantSummary>();
    ASSERT_EQ(LaunchScaleRows(source.as<const S>(), with_sums.as<W>(), rows, cols, summary, stream,
                              row_sums.as<double>()),
              cudaSuccess);
    ASSERT_EQ(
        LaunchScaleRows(source.as<const S>(), without.as<W>(), rows, cols, summary + 1, stream),
        cudaSuccess);
    // The scaled copy read column-major: cols x rows, its column r the scaled row r.
    ASSERT_EQ(LaunchColumnAbsSums(with_sums.as<const W>(), cols, rows, cols,
                                  /*upper_triangle=*/false, column_sums.as<double>(), stream),
              cudaSuccess);
    const std::vector<double> fused = this->template Download<double>(row_sums, rows);
    const std::vector<double> separate = this->template Download<double>(column_sums, rows);
    EXPECT_EQ(std::memcmp(fused.data(), separate.data(), rows * sizeof(double)), 0);
    const std::vector<W> copy = this->template Download<W>(with_sums, elements);
    const std::vector<W> plain = this->template Download<W>(without, elements);
    EXPECT_EQ(std::memcmp(copy.data(), plain.data(), elements * sizeof(W)), 0);
    const std::vector<DeterminantSummary> both =
        this->template Download<DeterminantSummary>(summaries, 2);
    EXPECT_EQ(both[0].row_exponent2, both[1].row_exponent2);
    EXPECT_EQ(both[0].zero_rows, both[1].zero_rows);
    EXPECT_EQ(both[0].zero_rows, rows >= 3 ? 1 : 0);
    for (int64_t r = 0; r < rows; ++r) {
      long double reference = 0.0L;
      for (int64_t c = 0; c < cols; ++c) reference += MagnitudeOf(copy[r * cols + c]);
      // Each entry's row is scaled into [1, 2) at its largest, so the sums lie in [1, 2 cols].
      if (rows >= 3 && r == 1) {
        EXPECT_EQ(fused[r], 0.0);
      } else {
        EXPECT_GE(fused[r], 1.0);
        EXPECT_NEAR(fused[r], static_cast<double>(reference), 1e-13 * fused[r]) << "row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace matrixd::cuda
