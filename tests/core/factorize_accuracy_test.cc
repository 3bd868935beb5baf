// Factorize with estimate_condition on every backend: rcond brackets the exact condition of
// matrices whose singular values are known exactly, and the reported relative error bound covers
// the actual forward error of a solve whose exact solution is known (integer systems, exact in
// double), for LU, Cholesky and QR; float32 uses float32's roundoff; singular and batched inputs.
#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"
#include "tests/core/dense_test_support.h"

namespace matrixd {
namespace {

using ::matrixd::testing::HermitianPositiveDefinite;
using ::matrixd::testing::RandomMatrix;

class FactorizeAccuracyTest : public ::matrixd::testing::BackendTest {
 protected:
  absl::StatusOr<FactorizeResult> Factorize(const Matrix& a, FactorizationKind kind,
                                            const Matrix* rhs = nullptr, int64_t batch_count = 0) {
    const MatrixView rhs_view = rhs != nullptr ? rhs->view() : MatrixView{};
    return backend().Factorize(
        a.view(), {.kind = kind, .batch_count = batch_count, .estimate_condition = true},
        rhs != nullptr ? &rhs_view : nullptr, nullptr);
  }
};

constexpr FactorizationKind kKinds[] = {FactorizationKind::kLu, FactorizationKind::kCholesky,
                                        FactorizationKind::kQr};

const char* KindName(FactorizationKind kind) {
  switch (kind) {
    case FactorizationKind::kCholesky:
      return "CHOLESKY";
    case FactorizationKind::kQr:
      return "QR";
    case FactorizationKind::kLu:
      break;
  }
  return "LU";
}

// H diag(d) H^T with H the n x n Sylvester-Hadamard matrix (n a power of two): singular values
// exactly n |d_i|, so kappa_2 = 10^decades; positive definite when every d_i > 0. Integer entries
// (as tests/core/determinant_test.cc builds them).
std::vector<int64_t> GradedSingularValues(int n, int decades, bool positive, std::mt19937_64& rng) {
  std::vector<int64_t> d(n);
  for (int i = 0; i < n; ++i) {
    int64_t power = 1;
    for (int k = 0; k < i * decades / (n - 1); ++k) power *= 10;
    d[i] = positive || rng() % 2 == 0 ? power : -power;
  }
  std::shuffle(d.begin(), d.end(), rng);
  const auto hadamard = [](int i, int j) { return std::popcount(unsigned(i & j)) % 2 ? -1 : 1; };
  std::vector<int64_t> a(static_cast<size_t>(n) * n, 0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < n; ++k) a[i * n + j] += hadamard(i, k) * d[k] * hadamard(j, k);
    }
  }
  return a;
}

Matrix AsDouble(const std::vector<int64_t>& values, int64_t rows, int64_t cols) {
  return Matrix::FromValues<double>(rows, cols, std::vector<double>(values.begin(), values.end()));
}

// The bound covers the forward error of A x = b, x in {-1, 1}^n and b = A x exact in double; rcond
// brackets 10^-decades within the factor n between the 1- and 2-norm conditions (and a factor 3
// for the estimate), and the ill-conditioned flag follows.
TEST_P(FactorizeAccuracyTest, BoundHoldsOnGradedSingularValues) {
  std::mt19937_64 rng(15);
  for (const FactorizationKind kind : kKinds) {
    for (int n : {4, 8, 16}) {
      for (int decades = 0; decades <= 12; decades += 2) {
        SCOPED_TRACE(::testing::Message()
                     << KindName(kind) << " n=" << n << " decades " << decades);
        const std::vector<int64_t> a =
            GradedSingularValues(n, decades, kind == FactorizationKind::kCholesky, rng);
        std::vector<int64_t> x(n);
        for (int64_t& v : x) v = rng() % 2 == 0 ? 1 : -1;
        std::vector<int64_t> b(n, 0);
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < n; ++j) b[i] += a[i * n + j] * x[j];
        }
        const Matrix rhs = AsDouble(b, n, 1);
        const absl::StatusOr<FactorizeResult> result = Factorize(AsDouble(a, n, n), kind, &rhs);
        ASSERT_TRUE(result.ok()) << result.status();
        ASSERT_TRUE(result->accuracy.has_value());
        ASSERT_TRUE(result->solution.has_value());
        const Accuracy& accuracy = *result->accuracy;
        double error = 0;
        for (int i = 0; i < n; ++i) {
          error += std::abs(result->solution->As<double>()[i] - static_cast<double>(x[i]));
        }
        error /= n;  // ||x||_1 = n
        EXPECT_LE(error, accuracy.relative_error_bound) << "rcond " << accuracy.rcond;
        const double kappa2 = std::pow(10.0, decades);
        EXPECT_LE(accuracy.rcond, 3.0 * n / kappa2);
        EXPECT_GE(accuracy.rcond, 1.0 / (3.0 * n * kappa2));
        if (decades <= 4) {
          EXPECT_FALSE(accuracy.ill_conditioned);
        }
        if (decades >= 12) {
          EXPECT_TRUE(accuracy.ill_conditioned);
        }
      }
    }
  }
}

// A tall m x n matrix U [diag(sigma); 0] V^T with orthogonal U and V (random reflections):
// kappa_2(R) = kappa_2(A) = 10^decades.
TEST_P(FactorizeAccuracyTest, TallQrReportsTheConditionOfR) {
  std::mt19937_64 rng(16);
  std::normal_distribution<double> normal;
  const int m = 60;
  const int n = 20;
  for (int decades : {0, 5, 10}) {
    SCOPED_TRACE(::testing::Message() << "decades " << decades);
    std::vector<double> a(static_cast<size_t>(m) * n, 0.0);
    for (int i = 0; i < n; ++i) a[i * n + i] = std::pow(10.0, -1.0 * decades * i / (n - 1));
    // Row reflection (m-vector) on the left, column reflection (n-vector) on the right.
    std::vector<double> u(m);
    for (double& v : u) v = normal(rng);
    std::vector<double> w(n);
    for (double& v : w) v = normal(rng);
    const double uu = std::inner_product(u.begin(), u.end(), u.begin(), 0.0);
    const double ww = std::inner_product(w.begin(), w.end(), w.begin(), 0.0);
    for (int j = 0; j < n; ++j) {
      double dot = 0;
      for (int i = 0; i < m; ++i) dot += u[i] * a[i * n + j];
      for (int i = 0; i < m; ++i) a[i * n + j] -= 2 * u[i] * dot / uu;
    }
    for (int i = 0; i < m; ++i) {
      double dot = 0;
      for (int j = 0; j < n; ++j) dot += a[i * n + j] * w[j];
      for (int j = 0; j < n; ++j) a[i * n + j] -= 2 * dot * w[j] / ww;
    }
    const absl::StatusOr<FactorizeResult> result =
        Factorize(Matrix::FromValues<double>(m, n, a), FactorizationKind::kQr);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->accuracy.has_value());
    const double kappa2 = std::pow(10.0, decades);
    EXPECT_LE(result->accuracy->rcond, 3.0 * n / kappa2);
    EXPECT_GE(result->accuracy->rcond, 1.0 / (3.0 * n * kappa2));
  }
}

TEST_P(FactorizeAccuracyTest, WideQrReportsTheConditionOfItsLeadingSquare) {
  const absl::StatusOr<FactorizeResult> result =
      Factorize(RandomMatrix<double>(6, 10, 3), FactorizationKind::kQr);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->accuracy.has_value());
  EXPECT_GT(result->accuracy->rcond, 0.0);
  EXPECT_LE(result->accuracy->rcond, 1.0);
}

TEST_P(FactorizeAccuracyTest, Float32UsesSinglePrecisionRoundoff) {
  for (const FactorizationKind kind : kKinds) {
    SCOPED_TRACE(KindName(kind));
    const Matrix a = kind == FactorizationKind::kCholesky ? HermitianPositiveDefinite<float>(32, 5)
                                                          : RandomMatrix<float>(32, 32, 5);
    const absl::StatusOr<FactorizeResult> result = Factorize(a, kind);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->accuracy.has_value());
    const Accuracy& accuracy = *result->accuracy;
    // n u kappa with u = 2^-24: at least 32 * 6e-8, at most 7.22 digits.
    EXPECT_GE(accuracy.relative_error_bound, 32 * 0x1p-24);
    EXPECT_LE(accuracy.meaningful_digits, 24 * std::log10(2.0) + 1e-9);
    EXPECT_GT(accuracy.meaningful_digits, 2.0);
  }
}

TEST_P(FactorizeAccuracyTest, ComplexSolvesStayWithinTheBound) {
  using C = std::complex<double>;
  for (const FactorizationKind kind : kKinds) {
    SCOPED_TRACE(KindName(kind));
    const int n = 24;
    const Matrix a = kind == FactorizationKind::kCholesky ? HermitianPositiveDefinite<C>(n, 7)
                                                          : RandomMatrix<C>(n, n, 7);
    // b = A x for x = (1, i, -1, -i, ...), summed in long double and rounded once.
    std::vector<C> x(n);
    for (int i = 0; i < n; ++i) x[i] = std::polar(1.0, (i % 4) * std::numbers::pi / 2);
    std::vector<C> b(n);
    for (int i = 0; i < n; ++i) {
      std::complex<long double> sum = 0;
      for (int j = 0; j < n; ++j) {
        sum += std::complex<long double>(a.As<C>()[i * n + j]) * std::complex<long double>(x[j]);
      }
      b[i] = C(sum);
    }
    const Matrix rhs = Matrix::FromValues<C>(n, 1, b);
    const absl::StatusOr<FactorizeResult> result = Factorize(a, kind, &rhs);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->accuracy.has_value());
    double error = 0;
    for (int i = 0; i < n; ++i) error += std::abs(result->solution->As<C>()[i] - x[i]);
    EXPECT_LE(error / n, result->accuracy->relative_error_bound);
    EXPECT_GT(result->accuracy->rcond, 1e-6);
  }
}

TEST_P(FactorizeAccuracyTest, SingularLuHasZeroRcondAndNoMeaningfulDigits) {
  const Matrix a = Matrix::FromValues<double>(3, 3, std::vector<double>{1, 2, 3, 2, 4, 6, 1, 0, 1});
  const absl::StatusOr<FactorizeResult> result = Factorize(a, FactorizationKind::kLu);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->accuracy.has_value());
  EXPECT_EQ(result->accuracy->rcond, 0.0);
  EXPECT_TRUE(std::isinf(result->accuracy->relative_error_bound));
  EXPECT_EQ(result->accuracy->meaningful_digits, 0.0);
  EXPECT_TRUE(result->accuracy->ill_conditioned);
}

TEST_P(FactorizeAccuracyTest, EstimateIsTimedAsItsOwnKernel) {
  const absl::StatusOr<FactorizeResult> result =
      Factorize(RandomMatrix<double>(64, 64, 9), FactorizationKind::kLu);
  ASSERT_TRUE(result.ok()) << result.status();
  const auto& kernels = result->stats.kernels;
  EXPECT_TRUE(std::any_of(kernels.begin(), kernels.end(),
                          [](const KernelRecord& k) { return k.kernel == "condition_estimate"; }));
}

TEST_P(FactorizeAccuracyTest, NoAccuracyUnlessAsked) {
  const Matrix a = RandomMatrix<double>(8, 8, 11);
  const absl::StatusOr<FactorizeResult> result =
      backend().Factorize(a.view(), {.kind = FactorizationKind::kLu}, nullptr, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->accuracy.has_value());
}

TEST_P(FactorizeAccuracyTest, BatchesAndRectangularLuAreRefusedNamingTheField) {
  const absl::StatusOr<FactorizeResult> batch =
      Factorize(RandomMatrix<double>(8, 4, 12), FactorizationKind::kLu, nullptr, 2);
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(batch.status().message().find("estimate_condition"), std::string::npos)
      << batch.status();
  const absl::StatusOr<FactorizeResult> wide =
      Factorize(RandomMatrix<double>(4, 6, 13), FactorizationKind::kLu);
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wide.status().message().find("estimate_condition"), std::string::npos) << wide.status();
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(FactorizeAccuracyTest);

}  // namespace
}  // namespace matrixd
