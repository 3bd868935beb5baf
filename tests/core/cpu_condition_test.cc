// The CPU backend's condition estimates (core/cpu/condition.h): the block estimator with blocked
// substitution on LU, Cholesky and triangular factors, in both storages and all four element
// types, against the exact 1 / (||A||_1 ||A^-1||_1) from the explicit inverse (LAPACK ?getri in
// double), and next to LAPACK's own ?gecon, which it replaces.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <vector>

#include "core/cpu/condition.h"
#include "core/cpu/lapack_types.h"
#include "gtest/gtest.h"
#include "tests/core/column_major_support.h"

namespace matrixd::cpu {
namespace {

using Complex = std::complex<double>;

template <typename T>
using WideOf = std::conditional_t<kIsComplex<T>, Complex, double>;

template <typename W>
std::vector<W> Random(int64_t n, std::mt19937_64& rng) {
  return testing::RandomSquare<W>(n, rng);
}

template <typename W>
double OneNorm(int64_t n, const std::vector<W>& a) {
  return testing::ColumnMajorOneNorm(n, a);
}

// 1 / (||A||_1 ||A^-1||_1) of the column-major A, from the explicit inverse.
template <typename W>
double ExactReciprocalCondition(int64_t n, std::vector<W> a) {
  const double norm = OneNorm(n, a);
  std::vector<lapack_int> pivots(static_cast<size_t>(n));
  const auto ln = static_cast<lapack_int>(n);
  EXPECT_EQ(Lapack<W>::getrf(LAPACK_COL_MAJOR, ln, ln, a.data(), ln, pivots.data()), 0);
  if constexpr (std::is_same_v<W, Complex>) {
    EXPECT_EQ(LAPACKE_zgetri(LAPACK_COL_MAJOR, ln, a.data(), ln, pivots.data()), 0);
  } else {
    EXPECT_EQ(LAPACKE_dgetri(LAPACK_COL_MAJOR, ln, a.data(), ln, pivots.data()), 0);
  }
  return 1.0 / (norm * OneNorm(n, a));
}

// The estimate is never above the exact rcond's reciprocal... i.e. rcond never below exact (up to
// the solves' rounding in T) and at most 3x above it.
template <typename T>
void ExpectBrackets(double estimate, double exact, int solves) {
  const double tolerance =
      sizeof(T) == sizeof(float) || sizeof(T) == sizeof(std::complex<float>) ? 1e-3 : 1e-9;
  EXPECT_GE(estimate, exact * (1 - tolerance));
  EXPECT_LE(estimate, 3.0 * exact);
  EXPECT_GE(solves, 1);
  EXPECT_LE(solves, 11);
}

template <typename T>
std::vector<T> Narrow(const std::vector<WideOf<T>>& a) {
  std::vector<T> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = static_cast<T>(a[i]);
  return out;
}

// Transposes the column-major n x n a (the row-major array of the same matrix).
template <typename W>
std::vector<W> RowMajorOf(int64_t n, const std::vector<W>& a) {
  std::vector<W> out(a.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) out[i * n + j] = a[i + j * n];
  }
  return out;
}

template <typename T>
class CpuCondition : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double, std::complex<float>, std::complex<double>>;
TYPED_TEST_SUITE(CpuCondition, ElementTypes);

TYPED_TEST(CpuCondition, LuInBothStoragesBracketsTheExactValue) {
  using T = TypeParam;
  using W = WideOf<T>;
  std::mt19937_64 rng(11);
  for (const int64_t n : {1, 2, 5, 63, 64, 65, 200}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const std::vector<W> a = Random<W>(n, rng);
    const double exact = ExactReciprocalCondition(n, a);
    const auto ln = static_cast<lapack_int>(n);
    std::vector<lapack_int> pivots(static_cast<size_t>(n));
    for (const Storage storage : {Storage::kColumnMajor, Storage::kRowMajor}) {
      std::vector<T> lu = Narrow<T>(storage == Storage::kRowMajor ? RowMajorOf(n, a) : a);
      ASSERT_EQ(
          Lapack<T>::getrf(storage == Storage::kRowMajor ? LAPACK_ROW_MAJOR : LAPACK_COL_MAJOR, ln,
                           ln, lu.data(), ln, pivots.data()),
          0);
      int solves = 0;
      const absl::StatusOr<double> rcond =
          ReciprocalCondition<T>(Factors::kLu, n, lu.data(), n, storage, OneNorm(n, a), &solves);
      ASSERT_TRUE(rcond.ok()) << rcond.status();
      ExpectBrackets<T>(*rcond, exact, solves);
    }
  }
}

TYPED_TEST(CpuCondition, CholeskyBracketsTheExactValue) {
  using T = TypeParam;
  using W = WideOf<T>;
  std::mt19937_64 rng(12);
  for (const int64_t n : {1, 3, 64, 130}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    // B B^H + I: Hermitian positive definite, condition ~ n^2.
    const std::vector<W> b = Random<W>(n, rng);
    std::vector<W> a(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        W sum = i == j ? W(1) : W(0);
        for (int64_t k = 0; k < n; ++k) {
          if constexpr (std::is_same_v<W, Complex>) {
            sum += b[i + k * n] * std::conj(b[j + k * n]);
          } else {
            sum += b[i + k * n] * b[j + k * n];
          }
        }
        a[i + j * n] = sum;
      }
    }
    const double exact = ExactReciprocalCondition(n, a);
    std::vector<T> l = Narrow<T>(a);
    const auto ln = static_cast<lapack_int>(n);
    ASSERT_EQ(Lapack<T>::potrf(LAPACK_COL_MAJOR, 'L', ln, l.data(), ln), 0);
    int solves = 0;
    const absl::StatusOr<double> rcond = ReciprocalCondition<T>(
        Factors::kCholesky, n, l.data(), n, Storage::kColumnMajor, OneNorm(n, a), &solves);
    ASSERT_TRUE(rcond.ok()) << rcond.status();
    ExpectBrackets<T>(*rcond, exact, solves);
  }
}

TYPED_TEST(CpuCondition, UpperTriangleReadsOnlyItsTriangle) {
  using T = TypeParam;
  using W = WideOf<T>;
  std::mt19937_64 rng(13);
  for (const int64_t n : {1, 4, 100}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    // R = upper triangle of a random matrix with a strong diagonal; the array's lower part holds
    // garbage that must not be read.
    std::vector<W> r = Random<W>(n, rng);
    std::vector<W> exact_r = r;
    for (int64_t i = 0; i < n; ++i) {
      r[i + i * n] += W(4.0);
      exact_r[i + i * n] = r[i + i * n];
      for (int64_t j = 0; j < i; ++j) exact_r[i + j * n] = W(0);
    }
    const double exact = ExactReciprocalCondition(n, exact_r);
    const std::vector<T> row_major = Narrow<T>(RowMajorOf(n, r));
    const double norm = UpperTriangleOneNorm<T>(n, row_major.data(), n, Storage::kRowMajor);
    EXPECT_NEAR(norm, OneNorm(n, exact_r), 1e-5 * norm);
    int solves = 0;
    const absl::StatusOr<double> rcond = ReciprocalCondition<T>(
        Factors::kUpper, n, row_major.data(), n, Storage::kRowMajor, norm, &solves);
    ASSERT_TRUE(rcond.ok()) << rcond.status();
    ExpectBrackets<T>(*rcond, exact, solves);
  }
}

// The estimate that replaced ?gecon is at least as good: never below ?gecon's by more than the
// estimators' own spread (both are lower bounds of ||A^-1||_1, so rcond's upper bounds).
TEST(CpuCondition, NoWorseThanGecon) {
  std::mt19937_64 rng(14);
  const int64_t n = 300;
  std::vector<double> a = Random<double>(n, rng);
  const double norm = OneNorm(n, a);
  const double exact = ExactReciprocalCondition(n, a);
  std::vector<lapack_int> pivots(n);
  ASSERT_EQ(LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, a.data(), n, pivots.data()), 0);
  double gecon = 0;
  ASSERT_EQ(LAPACKE_dgecon(LAPACK_COL_MAJOR, '1', n, a.data(), n, norm, &gecon), 0);
  const absl::StatusOr<double> rcond =
      ReciprocalCondition<double>(Factors::kLu, n, a.data(), n, Storage::kColumnMajor, norm);
  ASSERT_TRUE(rcond.ok());
  EXPECT_LE(*rcond, gecon * 1.5) << "exact " << exact;
  EXPECT_GE(*rcond, exact * (1 - 1e-9));
}

TEST(CpuCondition, ZeroPivotGivesZero) {
  // U has a zero on its diagonal: the solve divides by it.
  const std::vector<double> lu = {1, 0, 0, 0};  // column-major [[1, 0], [0, 0]]
  EXPECT_EQ(*ReciprocalCondition<double>(Factors::kLu, 2, lu.data(), 2, Storage::kColumnMajor, 1.0),
            0.0);
}

}  // namespace
}  // namespace matrixd::cpu
