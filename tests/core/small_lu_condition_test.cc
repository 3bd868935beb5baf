// SmallLuReciprocalCondition (core/cpu/small_lu_condition.h): ?gecon's estimate with plain-loop
// solves, against LAPACK's ?gecon on the same factors (the same estimator, so the same value up to
// the solves' rounding) and against the exact 1 / (||A||_1 ||A^-1||_1) from the explicit inverse;
// nullopt when a solve overflows.
#include "core/cpu/small_lu_condition.h"

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <type_traits>
#include <vector>

#include "core/cpu/lapack_types.h"
#include "gtest/gtest.h"
#include "tests/core/column_major_support.h"

namespace matrixd::cpu {
namespace {

using Complex = std::complex<double>;

// getrf's factors of the column-major A (in place); EXPECTs no zero pivot.
template <typename T>
void Factor(int64_t n, std::vector<T>& a) {
  std::vector<lapack_int> pivots(static_cast<size_t>(n));
  const auto ln = static_cast<lapack_int>(n);
  ASSERT_EQ(Lapack<T>::getrf(LAPACK_COL_MAJOR, ln, ln, a.data(), ln, pivots.data()), 0);
}

template <typename T>
double LapackGecon(int64_t n, const std::vector<T>& lu, double norm) {
  double rcond = -1;
  const auto ln = static_cast<lapack_int>(n);
  EXPECT_EQ(Lapack<T>::gecon(LAPACK_COL_MAJOR, '1', ln, lu.data(), ln, norm, &rcond), 0);
  return rcond;
}

// 1 / (||A||_1 ||A^-1||_1) from the explicit inverse of A, given its factors.
template <typename T>
double ExactReciprocalCondition(int64_t n, std::vector<T> lu, double norm) {
  std::vector<lapack_int> pivots(static_cast<size_t>(n));
  const auto ln = static_cast<lapack_int>(n);
  // The factors without their pivots are those of a row permutation of A: same ||A^-1||_1.
  for (lapack_int i = 0; i < ln; ++i) pivots[i] = i + 1;
  if constexpr (std::is_same_v<T, Complex>) {
    EXPECT_EQ(LAPACKE_zgetri(LAPACK_COL_MAJOR, ln, lu.data(), ln, pivots.data()), 0);
  } else {
    EXPECT_EQ(LAPACKE_dgetri(LAPACK_COL_MAJOR, ln, lu.data(), ln, pivots.data()), 0);
  }
  return 1.0 / (norm * testing::ColumnMajorOneNorm(n, lu));
}

template <typename T>
class SmallLuConditionTest : public ::testing::Test {};
using ElementTypes = ::testing::Types<double, Complex>;
TYPED_TEST_SUITE(SmallLuConditionTest, ElementTypes);

TYPED_TEST(SmallLuConditionTest, RandomMatricesMatchGeconAndBoundTheExactCondition) {
  using T = TypeParam;
  std::mt19937_64 rng(17);
  for (const int64_t n : {1, 2, 3, 8, 17, 32, 63, 64}) {
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<T> a = testing::RandomSquare<T>(n, rng);
      const double norm = testing::ColumnMajorOneNorm(n, a);
      Factor(n, a);
      int solves = 0;
      const std::optional<double> rcond = SmallLuReciprocalCondition(n, a.data(), norm, &solves);
      ASSERT_TRUE(rcond.has_value()) << "n = " << n;
      // ?lacn2: one solve for n = 1; from n = 2 at least x = e / n and its sign vector, and at
      // most 5 iterations of two plus the closing alternative.
      EXPECT_GE(solves, n == 1 ? 1 : 2) << "n = " << n;
      EXPECT_LE(solves, 11) << "n = " << n;
      EXPECT_NEAR(*rcond, LapackGecon(n, a, norm), 1e-10 * *rcond) << "n = " << n;
      // An estimate of ||A^-1||_1 from below: rcond from above, within the estimator's factor.
      const double exact = ExactReciprocalCondition(n, a, norm);
      EXPECT_GE(*rcond, exact * (1 - 1e-10)) << "n = " << n;
      EXPECT_LE(*rcond, 10 * exact) << "n = " << n;
    }
  }
}

TYPED_TEST(SmallLuConditionTest, HilbertMatricesMatchGecon) {
  using T = TypeParam;
  for (const int64_t n : {4, 8, 12}) {
    std::vector<T> a(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) a[i + j * n] = T(1.0 / static_cast<double>(i + j + 1));
    }
    const double norm = testing::ColumnMajorOneNorm(n, a);
    Factor(n, a);
    const std::optional<double> rcond = SmallLuReciprocalCondition(n, a.data(), norm);
    ASSERT_TRUE(rcond.has_value());
    const double gecon = LapackGecon(n, a, norm);
    // cond_1(H_12) ~ 4e16: the solves' rounding moves the estimate, not its magnitude.
    EXPECT_NEAR(std::log10(*rcond), std::log10(gecon), 0.05) << "n = " << n;
    EXPECT_LT(*rcond, n == 12 ? 1e-15 : 1e-3) << "n = " << n;
  }
}

TYPED_TEST(SmallLuConditionTest, OverflowingSolveIsNullopt) {
  using T = TypeParam;
  // U = [[1e-300, 1], [0, 1e-300]], L = I: U^-1 has an entry 1e600.
  const std::vector<T> lu = {T(1e-300), T(0.0), T(1.0), T(1e-300)};
  EXPECT_FALSE(SmallLuReciprocalCondition(2, lu.data(), 1.0).has_value());
}

TYPED_TEST(SmallLuConditionTest, OrderOneIsExact) {
  using T = TypeParam;
  const std::vector<T> lu = {T(-4.0)};
  const std::optional<double> rcond = SmallLuReciprocalCondition(1, lu.data(), 4.0);
  ASSERT_TRUE(rcond.has_value());
  EXPECT_DOUBLE_EQ(*rcond, 1.0);
}

}  // namespace
}  // namespace matrixd::cpu
