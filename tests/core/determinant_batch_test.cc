// Backend::DeterminantBatch (issue 13, coalesced small determinants): each member's determinant
// against the exact integer one, singular members as zeros, and the contract's errors, on both
// backends (CUDA: one batched getrf and a reduction kernel; CPU: one Determinant per member).
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <vector>

#include "core/backend.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"

namespace matrixd {
namespace {

using testing::BackendTest;

__extension__ typedef __int128 Int128;

// det of an integer n x n matrix by Bareiss's fraction-free elimination (exact: every division
// is exact; the entries stay below the Hadamard bound, inside int64 for n <= 12 and entries up to
// 5, and their products inside 128 bits).
int64_t ExactDeterminant(std::vector<int64_t> m, int n) {
  int64_t sign = 1;
  int64_t previous = 1;
  for (int k = 0; k < n - 1; ++k) {
    if (m[k * n + k] == 0) {
      int swap = k + 1;
      while (swap < n && m[swap * n + k] == 0) ++swap;
      if (swap == n) return 0;
      for (int j = 0; j < n; ++j) std::swap(m[k * n + j], m[swap * n + j]);
      sign = -sign;
    }
    for (int i = k + 1; i < n; ++i) {
      for (int j = k + 1; j < n; ++j) {
        m[i * n + j] = static_cast<int64_t>(
            (Int128{m[i * n + j]} * m[k * n + k] - Int128{m[i * n + k]} * m[k * n + j]) / previous);
      }
    }
    previous = m[k * n + k];
  }
  return sign * m[(n - 1) * n + (n - 1)];
}

struct IntegerBatch {
  Matrix stacked;              // float64, members stacked vertically
  std::vector<int64_t> exact;  // each member's determinant
};

// `count` random n x n matrices with entries in [-5, 5]; member `singular` (if >= 0) gets a zero
// second row.
IntegerBatch RandomIntegerBatch(int count, int n, int singular, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int64_t> entry(-5, 5);
  IntegerBatch batch{Matrix(int64_t{count} * n, n, DType::kFloat64), {}};
  auto* data = reinterpret_cast<double*>(batch.stacked.mutable_bytes());
  for (int b = 0; b < count; ++b) {
    std::vector<int64_t> m(static_cast<size_t>(n) * n);
    for (int64_t& x : m) x = entry(random);
    if (b == singular) {
      for (int j = 0; j < n; ++j) m[static_cast<size_t>(n) + j] = 0;
    }
    for (size_t i = 0; i < m.size(); ++i) data[static_cast<size_t>(b) * n * n + i] = double(m[i]);
    batch.exact.push_back(ExactDeterminant(m, n));
  }
  return batch;
}

class DeterminantBatchTest : public BackendTest {};

TEST_P(DeterminantBatchTest, EachMemberMatchesItsExactDeterminant) {
  for (int n : {1, 2, 5, 8, 12}) {
    const int count = 33;
    const IntegerBatch batch = RandomIntegerBatch(count, n, /*singular=*/n > 1 ? 7 : -1, 1000 + n);
    absl::StatusOr<std::vector<DeterminantResult>> results =
        backend().DeterminantBatch(batch.stacked.view(), count, {}, nullptr);
    ASSERT_TRUE(results.ok()) << results.status();
    ASSERT_EQ(results->size(), static_cast<size_t>(count));
    for (int b = 0; b < count; ++b) {
      const double exact = static_cast<double>(batch.exact[static_cast<size_t>(b)]);
      const std::complex<double> value = (*results)[static_cast<size_t>(b)].value.ToComplex();
      if (exact == 0.0 && b == 7) {  // the zero row: exactly zero
        EXPECT_EQ(value, std::complex<double>(0.0)) << "n = " << n << ", member " << b;
      } else if (exact == 0.0) {
        // Singular only in exact arithmetic (rows proportional by chance): LU leaves rounding,
        // ~1e-16 of the entries' products (member 23 of n = 2 gave -2.8e-16 on the H100).
        EXPECT_LE(std::abs(value), 1e-12 * std::pow(5.0 * n, n)) << "n = " << n << ", member " << b;
      } else {
        EXPECT_NEAR(value.real() / exact, 1.0, 1e-11) << "n = " << n << ", member " << b;
        EXPECT_EQ(value.imag(), 0.0);
      }
      EXPECT_EQ((*results)[static_cast<size_t>(b)].method_used, DeterminantMethod::kLu);
    }
  }
}

TEST_P(DeterminantBatchTest, MembersEqualTheirOwnDeterminantCalls) {
  const int count = 9;
  const int n = 12;
  Matrix stacked(int64_t{count} * n, n, DType::kComplex128);
  std::mt19937 random(7);
  std::normal_distribution<double> normal;
  auto* data = reinterpret_cast<std::complex<double>*>(stacked.mutable_bytes());
  for (int64_t i = 0; i < stacked.rows() * n; ++i) data[i] = {normal(random), normal(random)};
  absl::StatusOr<std::vector<DeterminantResult>> results =
      backend().DeterminantBatch(stacked.view(), count, {}, nullptr);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int b = 0; b < count; ++b) {
    absl::StatusOr<DeterminantResult> alone =
        backend().Determinant(BatchMember(stacked.view(), count, b), {}, nullptr);
    ASSERT_TRUE(alone.ok()) << alone.status();
    const std::complex<double> batched = (*results)[static_cast<size_t>(b)].value.ToComplex();
    const std::complex<double> single = alone->value.ToComplex();
    EXPECT_LT(std::abs(batched - single), 1e-12 * std::abs(single)) << "member " << b;
  }
}

TEST_P(DeterminantBatchTest, RefusesARaggedBatchAndAModulus) {
  const Matrix a(10, 3, DType::kFloat64);
  EXPECT_EQ(backend().DeterminantBatch(a.view(), 3, {}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Matrix b(9, 3, DType::kFloat64);
  EXPECT_EQ(backend().DeterminantBatch(b.view(), 3, {.modulus = 7}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(DeterminantBatchTest);

}  // namespace
}  // namespace matrixd
