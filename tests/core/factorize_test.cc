// LU, Cholesky and QR on every backend and every floating dtype: the factors are multiplied back
// (and the solves checked) in long double, against backward-error bounds of c * n * eps in the
// dtype's own precision; singular and indefinite inputs are built so that the zero pivot is exact.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/backend.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"
#include "tests/core/dense_test_support.h"

namespace matrixd {
namespace {

// The constant c of the c * n * eps bounds.
constexpr long double kSlack = 10;

using ::matrixd::testing::Abs2;
using ::matrixd::testing::ConjugateTranspose;
using ::matrixd::testing::DistanceNorm;
using ::matrixd::testing::Eps;
using ::matrixd::testing::ExpectQrOf;
using ::matrixd::testing::ExpectSolves;
using ::matrixd::testing::ForEachFloatingType;
using ::matrixd::testing::HermitianPositiveDefinite;
using ::matrixd::testing::kComplex;
using ::matrixd::testing::Mul;
using ::matrixd::testing::Norm;
using ::matrixd::testing::Product;
using ::matrixd::testing::RandomMatrix;
using ::matrixd::testing::Real;
using ::matrixd::testing::SolveWide;
using ::matrixd::testing::Wide;
using ::matrixd::testing::WideMatrix;
using ::matrixd::testing::Widen;

// ---- Checks ----

// P A = L U in long double, a permutation, unit L with |l| <= 1 for real types, and the expected
// singular column.
template <typename T>
void ExpectLuReconstructs(Backend& backend, const Matrix& a,
                          std::optional<int64_t> want_singular_column) {
  const int64_t m = a.rows();
  const int64_t n = a.cols();
  const int64_t k = std::min(m, n);
  const auto result =
      backend.Factorize(a.view(), {.kind = FactorizationKind::kLu}, nullptr, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->kind, FactorizationKind::kLu);
  ASSERT_EQ(result->lu.rows(), m);
  ASSERT_EQ(result->lu.cols(), n);
  ASSERT_EQ(result->lu.dtype(), a.dtype());
  EXPECT_FALSE(result->solution.has_value());
  EXPECT_EQ(result->singular_column, want_singular_column);

  std::vector<int64_t> sorted = result->permutation;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(static_cast<size_t>(m));
  std::iota(identity.begin(), identity.end(), int64_t{0});
  ASSERT_EQ(sorted, identity) << "not a permutation of the rows";

  const auto lu = Widen<T>(result->lu);
  WideMatrix<Wide<T>> l(m, k);
  WideMatrix<Wide<T>> u(k, n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (j < i && j < k) l(i, j) = lu(i, j);
      if (j >= i && i < k) u(i, j) = lu(i, j);
    }
    if (i < k) l(i, i) = 1;
  }
  if constexpr (!kComplex<T>) {
    for (const auto& x : l.v) EXPECT_LE(std::abs(x), 1 + 2 * Eps<T>()) << "pivoting is not partial";
  }
  const auto wide_a = Widen<T>(a);
  WideMatrix<Wide<T>> pa(m, n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) pa(i, j) = wide_a(result->permutation[i], j);
  }
  const long double error = DistanceNorm(pa, Product(l, u)) / Norm(wide_a);
  EXPECT_LE(error, kSlack * std::max(m, n) * Eps<T>()) << m << "x" << n;
}

// ---- Tests ----

class FactorizeTest : public testing::BackendTest {};

TEST_P(FactorizeTest, LuReconstructsRandomSquareMatrices) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    for (const int64_t n : {1, 7, 64, 200}) {
      ExpectLuReconstructs<T>(backend(), RandomMatrix<T>(n, n, 100 + n), std::nullopt);
    }
  });
}

TEST_P(FactorizeTest, LuReconstructsRectangularMatrices) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    ExpectLuReconstructs<T>(backend(), RandomMatrix<T>(5, 3, 1), std::nullopt);
    ExpectLuReconstructs<T>(backend(), RandomMatrix<T>(3, 5, 2), std::nullopt);
    ExpectLuReconstructs<T>(backend(), RandomMatrix<T>(1, 4, 3), std::nullopt);
    ExpectLuReconstructs<T>(backend(), RandomMatrix<T>(4, 1, 4), std::nullopt);
  });
}

TEST_P(FactorizeTest, LuHoldsForHugeAndTinyEntries) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    // Powers of two near the ends of each type's exponent range, leaving room for n-fold growth.
    const int exponent = std::is_same_v<Real<T>, float> ? 100 : 900;
    for (const int sign : {1, -1}) {
      ExpectLuReconstructs<T>(
          backend(), RandomMatrix<T>(30, 30, 7, std::ldexp(1.0, sign * exponent)), std::nullopt);
    }
  });
}

TEST_P(FactorizeTest, LuPivotsPastZeroLeadingEntry) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const Matrix a = Matrix::FromValues<T>(3, 3, std::vector<T>{0, 2, 1, 1, 1, 1, 3, 0, 2});
    ExpectLuReconstructs<T>(backend(), a, std::nullopt);
    const auto result =
        backend().Factorize(a.view(), {.kind = FactorizationKind::kLu}, nullptr, nullptr);
    ASSERT_TRUE(result.ok()) << result.status();
    // Partial pivoting takes the largest entry of column 0, in row 2.
    EXPECT_EQ(result->permutation[0], 2);
  });
}

TEST_P(FactorizeTest, LuOfZeroColumnReportsThatColumnAndStillFactors) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    Matrix a = RandomMatrix<T>(6, 6, 11);
    // The zero column stays exactly zero through every update, so U[3,3] is exactly 0.
    for (int64_t i = 0; i < 6; ++i) a.As<T>()[i * 6 + 3] = T(0);
    ExpectLuReconstructs<T>(backend(), a, 3);
  });
}

TEST_P(FactorizeTest, LuOfDuplicateRowsReportsLastColumn) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    // Rows 1 and 2 are equal; pivots 4 and 1/2 keep every step exact, so row 2 cancels to an
    // exact zero and U[2,2] = 0.
    const Matrix a = Matrix::FromValues<T>(3, 3, std::vector<T>{4, 1, 2, 2, 1, 1, 2, 1, 1});
    ExpectLuReconstructs<T>(backend(), a, 2);
  });
}

TEST_P(FactorizeTest, LuSolveHasSmallBackwardError) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    for (const int64_t n : {1, 40}) {
      const Matrix a = RandomMatrix<T>(n, n, 21 + n);
      const Matrix b = RandomMatrix<T>(n, 3, 22 + n);
      const MatrixView rhs = b.view();
      const auto result =
          backend().Factorize(a.view(), {.kind = FactorizationKind::kLu}, &rhs, nullptr);
      ASSERT_TRUE(result.ok()) << result.status();
      ASSERT_TRUE(result->solution.has_value());
      ExpectSolves<T>(a, b, *result->solution, kSlack);
    }
  });
}

TEST_P(FactorizeTest, LuSolveOfSingularMatrixFailsPrecondition) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    Matrix a = RandomMatrix<T>(5, 5, 31);
    for (int64_t i = 0; i < 5; ++i) a.As<T>()[i * 5 + 2] = T(0);
    const Matrix b = RandomMatrix<T>(5, 1, 32);
    const MatrixView rhs = b.view();
    const auto result =
        backend().Factorize(a.view(), {.kind = FactorizationKind::kLu}, &rhs, nullptr);
    ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
    EXPECT_NE(result.status().message().find("singular"), std::string::npos) << result.status();
    EXPECT_NE(result.status().message().find("column 2"), std::string::npos) << result.status();
  });
}

TEST_P(FactorizeTest, CholeskyReconstructsPositiveDefiniteMatrices) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const int exponent = std::is_same_v<Real<T>, float> ? 90 : 900;
    for (const int64_t n : {1, 8, 60}) {
      for (const double scale : {1.0, std::ldexp(1.0, exponent), std::ldexp(1.0, -exponent)}) {
        const Matrix a = HermitianPositiveDefinite<T>(n, 40 + n, scale);
        const auto result =
            backend().Factorize(a.view(), {.kind = FactorizationKind::kCholesky}, nullptr, nullptr);
        ASSERT_TRUE(result.ok()) << result.status();
        EXPECT_EQ(result->kind, FactorizationKind::kCholesky);
        ASSERT_EQ(result->l.rows(), n);
        ASSERT_EQ(result->l.cols(), n);
        ASSERT_EQ(result->l.dtype(), a.dtype());
        const auto l = Widen<T>(result->l);
        for (int64_t i = 0; i < n; ++i) {
          EXPECT_GT(std::real(l(i, i)), 0) << "diagonal " << i;
          EXPECT_EQ(std::imag(l(i, i)), 0) << "diagonal " << i;
          for (int64_t j = i + 1; j < n; ++j) EXPECT_EQ(l(i, j), Wide<T>(0)) << i << "," << j;
        }
        const auto wide_a = Widen<T>(a);
        const long double error =
            DistanceNorm(Product(l, ConjugateTranspose(l)), wide_a) / Norm(wide_a);
        EXPECT_LE(error, kSlack * n * Eps<T>()) << "n = " << n << ", scale = " << scale;
      }
    }
  });
}

TEST_P(FactorizeTest, CholeskyOfIndefiniteMatrixNamesTheFailingMinor) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    struct Case {
      int64_t n;
      std::vector<T> values;
      int order;
    };
    const Case cases[] = {
        {1, {0}, 1},
        {2, {1, 2, 2, 1}, 2},
        {3, {4, 0, 0, 0, 9, 0, 0, 0, -1}, 3},
        {3, {1, 1, 0, 1, 1, 0, 0, 0, 1}, 2},  // positive semidefinite: minor 2 is exactly 0
    };
    for (const Case& c : cases) {
      const Matrix a = Matrix::FromValues<T>(c.n, c.n, c.values);
      const auto result =
          backend().Factorize(a.view(), {.kind = FactorizationKind::kCholesky}, nullptr, nullptr);
      ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
      EXPECT_NE(result.status().message().find("not positive definite"), std::string::npos)
          << result.status();
      EXPECT_NE(result.status().message().find("order " + std::to_string(c.order)),
                std::string::npos)
          << result.status();
    }
  });
}

TEST_P(FactorizeTest, CholeskySolveHasSmallBackwardError) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const Matrix a = HermitianPositiveDefinite<T>(30, 51);
    const Matrix b = RandomMatrix<T>(30, 4, 52);
    const MatrixView rhs = b.view();
    const auto result =
        backend().Factorize(a.view(), {.kind = FactorizationKind::kCholesky}, &rhs, nullptr);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->solution.has_value());
    ExpectSolves<T>(a, b, *result->solution, kSlack);
  });
}

TEST_P(FactorizeTest, QrReconstructsTallSquareAndWideMatrices) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {1, 5},   {5, 1},   {9, 4},
                                                  {4, 9}, {30, 30}, {64, 20}, {20, 64}};
    for (const auto& [m, n] : shapes) {
      SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n));
      const int64_t k = std::min(m, n);
      const Matrix a = RandomMatrix<T>(m, n, 60 + m * 100 + n);
      const auto result =
          backend().Factorize(a.view(), {.kind = FactorizationKind::kQr}, nullptr, nullptr);
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(result->kind, FactorizationKind::kQr);
      ASSERT_EQ(result->q.rows(), m);
      ASSERT_EQ(result->q.cols(), k);
      ASSERT_EQ(result->r.rows(), k);
      ASSERT_EQ(result->r.cols(), n);
      ASSERT_EQ(result->q.dtype(), a.dtype());
      ASSERT_EQ(result->r.dtype(), a.dtype());
      ExpectQrOf<T>(a, result->q, result->r, kSlack);
    }
  });
}

TEST_P(FactorizeTest, QrSolveMatchesNormalEquations) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const int64_t m = 20;
    const int64_t n = 5;
    const Matrix a = RandomMatrix<T>(m, n, 71);
    const Matrix b = RandomMatrix<T>(m, 2, 72);
    const MatrixView rhs = b.view();
    const auto result =
        backend().Factorize(a.view(), {.kind = FactorizationKind::kQr}, &rhs, nullptr);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->solution.has_value());
    ASSERT_EQ(result->solution->rows(), n);
    ASSERT_EQ(result->solution->cols(), 2);
    // A^H A x = A^H b, solved in long double.
    const auto wide_a = Widen<T>(a);
    const auto a_h = ConjugateTranspose(wide_a);
    const auto want = SolveWide(Product(a_h, wide_a), Product(a_h, Widen<T>(b)));
    // A random 20x5 matrix is well conditioned (cond < 10), so the forward error is a small
    // multiple of eps.
    EXPECT_LE(DistanceNorm(Widen<T>(*result->solution), want) / Norm(want), kSlack * m * Eps<T>());
  });
}

TEST_P(FactorizeTest, QrSolveOfSquareSystemHasSmallBackwardError) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const Matrix a = RandomMatrix<T>(25, 25, 81);
    const Matrix b = RandomMatrix<T>(25, 3, 82);
    const MatrixView rhs = b.view();
    const auto result =
        backend().Factorize(a.view(), {.kind = FactorizationKind::kQr}, &rhs, nullptr);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->solution.has_value());
    ExpectSolves<T>(a, b, *result->solution, kSlack);
  });
}

TEST_P(FactorizeTest, QrSolveWithoutFullColumnRankFailsPrecondition) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    Matrix a = RandomMatrix<T>(8, 4, 91);
    for (int64_t i = 0; i < 8; ++i) a.As<T>()[i * 4 + 2] = T(0);
    const Matrix b = RandomMatrix<T>(8, 1, 92);
    const MatrixView rhs = b.view();
    const auto result =
        backend().Factorize(a.view(), {.kind = FactorizationKind::kQr}, &rhs, nullptr);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
  });
}

TEST_P(FactorizeTest, FactorizeRejectsIntegerDTypes) {
  const Matrix a = Matrix::FromValues<int64_t>(2, 2, std::vector<int64_t>{1, 2, 3, 4});
  const Matrix u = Matrix::FromValues<uint32_t>(2, 2, std::vector<uint32_t>{1, 2, 3, 4});
  for (const FactorizationKind kind :
       {FactorizationKind::kLu, FactorizationKind::kCholesky, FactorizationKind::kQr}) {
    EXPECT_EQ(backend().Factorize(a.view(), {.kind = kind}, nullptr, nullptr).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(backend().Factorize(u.view(), {.kind = kind}, nullptr, nullptr).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST_P(FactorizeTest, FactorizeReturnsCancelledWhenCancelled) {
  const Matrix a = RandomMatrix<double>(4, 4, 101);
  JobControl control;
  control.Cancel();
  EXPECT_EQ(backend()
                .Factorize(a.view(), {.kind = FactorizationKind::kLu}, nullptr, &control)
                .status()
                .code(),
            absl::StatusCode::kCancelled);
}

TEST_P(FactorizeTest, FactorizeCountsFlopsAndBytes) {
  const Matrix a = RandomMatrix<double>(10, 10, 111);
  const auto result =
      backend().Factorize(a.view(), {.kind = FactorizationKind::kLu}, nullptr, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  // About 2n^3/3, whatever the lower-order terms.
  EXPECT_NEAR(result->stats.flops, 2.0 * 1000 / 3, 0.2 * 2.0 * 1000 / 3);
  EXPECT_GE(result->stats.bytes_moved, a.byte_size());
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(FactorizeTest);

}  // namespace
}  // namespace matrixd
