// Iterative refinement (core/refinement.h, core/cpu/refine.h, core/cuda/refine.h) on both
// backends: the mixed-precision path reaches double precision on float32-factorized systems of
// condition up to 1e6 and falls back beyond, same-precision refinement reaches working precision
// and repairs an unstable solve, and the options are checked. CUDA cases skip without a device.
#include "core/cpu/refine.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/backend.h"
#include "core/make_backend.h"
#include "core/matrix.h"
#include "core/refinement.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"
#include "tests/core/dense_test_support.h"

namespace matrixd {
namespace {

using ::testing::HasSubstr;
using testing::RandomMatrix;

// Q of the QR factorization of a random n x n matrix (the CPU backend's), as doubles.
std::vector<double> RandomOrthogonal(int64_t n, uint64_t seed) {
  auto cpu = MakeBackend("cpu", {});
  EXPECT_TRUE(cpu.ok());
  const Matrix m = RandomMatrix<double>(n, n, seed);
  auto qr = (*cpu)->Factorize(m.view(), {.kind = FactorizationKind::kQr}, nullptr, nullptr);
  EXPECT_TRUE(qr.ok()) << qr.status();
  const auto q = qr->q.As<double>();
  return {q.begin(), q.end()};
}

// U diag(s) V^T with U, V random orthogonal and s graded geometrically from 1 to 1 / condition:
// its 2-norm condition number is `condition` (up to the rounding to T). For complex T the
// imaginary parts are zero: a real system solved in complex arithmetic.
template <typename T>
Matrix GradedMatrix(int64_t n, double condition, uint64_t seed) {
  const std::vector<double> u = RandomOrthogonal(n, seed);
  const std::vector<double> v = RandomOrthogonal(n, seed + 1);
  std::vector<double> us(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < n; ++k) {
      const double s = std::pow(condition, -static_cast<double>(k) / static_cast<double>(n - 1));
      us[i * n + k] = u[i * n + k] * s;
    }
  }
  std::vector<T> a(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      long double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += static_cast<long double>(us[i * n + k]) * v[j * n + k];
      a[i * n + j] = T(static_cast<double>(sum));
    }
  }
  return Matrix::FromValues<T>(n, n, a);
}

template <typename T>
constexpr bool IsComplexType() {
  return !std::is_floating_point_v<T>;
}

// b = A x_true (rounded to T), x_true random.
template <typename T>
Matrix RightHandSide(const Matrix& a, const Matrix& x_true) {
  const int64_t n = a.rows();
  const int64_t k = x_true.cols();
  std::vector<T> b(static_cast<size_t>(n * k));
  const auto av = a.As<T>();
  const auto xv = x_true.As<T>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      std::complex<long double> sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        sum += std::complex<long double>(std::complex<double>(av[i * n + j])) *
               std::complex<long double>(std::complex<double>(xv[j * k + c]));
      }
      if constexpr (IsComplexType<T>()) {
        b[i * k + c] = T(static_cast<double>(sum.real()), static_cast<double>(sum.imag()));
      } else {
        b[i * k + c] = static_cast<T>(sum.real());
      }
    }
  }
  return Matrix::FromValues<T>(n, k, b);
}

// max_i |x_i - y_i| / max_i |y_i|.
template <typename T>
double RelativeDistance(const Matrix& x, const Matrix& y) {
  double difference = 0.0;
  double scale = 0.0;
  const auto xv = x.As<T>();
  const auto yv = y.As<T>();
  for (size_t e = 0; e < xv.size(); ++e) {
    difference = std::max(difference, static_cast<double>(std::abs(xv[e] - yv[e])));
    scale = std::max(scale, static_cast<double>(std::abs(yv[e])));
  }
  return difference / scale;
}

class RefineTest : public testing::BackendTest {
 protected:
  absl::StatusOr<FactorizeResult> Refine(const Matrix& a, const Matrix& b,
                                         RefinePrecision precision, int max_iterations = 0) {
    const MatrixView rhs = b.view();
    return backend().Factorize(a.view(),
                               {.refine = {.enabled = true,
                                           .factor_precision = precision,
                                           .max_iterations = max_iterations}},
                               &rhs, nullptr);
  }
};

TEST_P(RefineTest, Float32FactorsGiveDoublePrecisionUpToCondition1e6) {
  constexpr int64_t kN = 160;
  for (const double condition : {1e2, 1e4, 1e6}) {
    SCOPED_TRACE(condition);
    const Matrix a = GradedMatrix<double>(kN, condition, 11);
    const Matrix x_true = RandomMatrix<double>(kN, 2, 12);
    const Matrix b = RightHandSide<double>(a, x_true);
    auto result = Refine(a, b, RefinePrecision::kFloat32);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->refinement.has_value());
    const Refinement& r = *result->refinement;
    EXPECT_FALSE(r.fell_back);
    EXPECT_EQ(r.factor_precision, "float32");
    EXPECT_TRUE(r.converged) << r.backward_error;
    EXPECT_LE(r.backward_error, RefineThreshold(DType::kFloat64, kN, RefinePrecision::kFloat32));
    EXPECT_GE(r.iterations, 1);
    // Float64-grade: forward error within cond(A) times a few u of double, far below what float32
    // factors alone give (cond(A) * 2^-24).
    EXPECT_LT(RelativeDistance<double>(*result->solution, x_true), condition * 1e-14);
    EXPECT_TRUE(result->lu.empty());
    EXPECT_TRUE(result->permutation.empty());
    // The reported backward error is the double-double one of the returned X.
    // (To rounding: the GPU sums the residual in another order; 5 ulps apart on the H100.)
    const double reference =
        cpu::RefinedBackwardError(a.view(), result->solution->view(), b.view());
    EXPECT_NEAR(r.backward_error, reference, 1e-12 * reference);
  }
}

TEST_P(RefineTest, Complex64FactorsGiveComplex128Precision) {
  constexpr int64_t kN = 96;
  const Matrix a = GradedMatrix<std::complex<double>>(kN, 1e4, 21);
  const Matrix x_true = RandomMatrix<std::complex<double>>(kN, 1, 22);
  const Matrix b = RightHandSide<std::complex<double>>(a, x_true);
  auto result = Refine(a, b, RefinePrecision::kFloat32);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->refinement->fell_back);
  EXPECT_EQ(result->refinement->factor_precision, "complex64");
  EXPECT_TRUE(result->refinement->converged) << result->refinement->backward_error;
  EXPECT_LT(RelativeDistance<std::complex<double>>(*result->solution, x_true), 1e-10);
}

TEST_P(RefineTest, TooIllConditionedForFloat32FallsBackToFullPrecision) {
  constexpr int64_t kN = 160;
  const Matrix a = GradedMatrix<double>(kN, 1e12, 31);
  const Matrix x_true = RandomMatrix<double>(kN, 1, 32);
  const Matrix b = RightHandSide<double>(a, x_true);
  auto result = Refine(a, b, RefinePrecision::kFloat32);
  ASSERT_TRUE(result.ok()) << result.status();
  const Refinement& r = *result->refinement;
  EXPECT_TRUE(r.fell_back);
  EXPECT_EQ(r.factor_precision, "float64");
  EXPECT_EQ(r.iterations, 0);
  // A float64 LU solve is backward stable whatever the condition.
  EXPECT_TRUE(r.converged) << r.backward_error;
  EXPECT_LT(RelativeDistance<double>(*result->solution, x_true), 1e12 * 1e-14);
}

TEST_P(RefineTest, SamePrecisionFloat32ReachesWorkingPrecision) {
  constexpr int64_t kN = 128;
  for (const double condition : {1e2, 1e4, 1e6}) {
    SCOPED_TRACE(condition);
    const Matrix a = GradedMatrix<float>(kN, condition, 41);
    const Matrix x_true = RandomMatrix<float>(kN, 1, 42);
    const Matrix b = RightHandSide<float>(a, x_true);
    auto refined = Refine(a, b, RefinePrecision::kInput);
    ASSERT_TRUE(refined.ok()) << refined.status();
    const Refinement& r = *refined->refinement;
    EXPECT_EQ(r.factor_precision, "float32");
    EXPECT_TRUE(r.converged) << r.backward_error;
    EXPECT_LE(r.backward_error, 4 * 0x1p-24);
    EXPECT_FALSE(refined->lu.empty());
    EXPECT_EQ(refined->permutation.size(), static_cast<size_t>(kN));

    // The exact solution of the float32 system, to ~cond * 1e-16: the same data solved in double.
    std::vector<double> a64(a.As<float>().begin(), a.As<float>().end());
    std::vector<double> b64(b.As<float>().begin(), b.As<float>().end());
    const Matrix a_wide = Matrix::FromValues<double>(kN, kN, a64);
    const Matrix b_wide = Matrix::FromValues<double>(kN, 1, b64);
    const MatrixView b_wide_view = b_wide.view();
    auto reference = backend().Factorize(a_wide.view(), {}, &b_wide_view, nullptr);
    ASSERT_TRUE(reference.ok());
    std::vector<float> reference32(reference->solution->As<double>().begin(),
                                   reference->solution->As<double>().end());
    const Matrix exact = Matrix::FromValues<float>(kN, 1, reference32);
    const MatrixView b_view = b.view();
    auto plain = backend().Factorize(a.view(), {}, &b_view, nullptr);
    ASSERT_TRUE(plain.ok());
    const double refined_error = RelativeDistance<float>(*refined->solution, exact);
    const double plain_error = RelativeDistance<float>(*plain->solution, exact);
    // Residuals in double make X accurate to a few float32 ulps, whatever the condition.
    EXPECT_LT(refined_error, 8 * 0x1p-24) << "plain " << plain_error;
    if (condition >= 1e4) {
      EXPECT_GT(plain_error, 10 * refined_error);
    }
  }
}

// Wilkinson's matrix (1 on the diagonal and in the last column, -1 below the diagonal) makes
// partial pivoting grow U's last column to 2^(n-1).
Matrix WilkinsonMatrix(int64_t n) {
  std::vector<double> values(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) values[i * n + j] = -1.0;
    values[i * n + i] = 1.0;
    values[i * n + n - 1] = 1.0;
  }
  return Matrix::FromValues<double>(n, n, values);
}

// A float64 LU solve of Wilkinson's matrix is far from backward stable, and refinement with
// double-double residuals repairs it.
TEST_P(RefineTest, SamePrecisionFloat64RepairsAnUnstableSolve) {
  constexpr int64_t kN = 40;
  const Matrix a = WilkinsonMatrix(kN);
  const Matrix b = RandomMatrix<double>(kN, 1, 51);
  const MatrixView b_view = b.view();
  auto plain = backend().Factorize(a.view(), {}, &b_view, nullptr);
  ASSERT_TRUE(plain.ok());
  const double plain_error = cpu::RefinedBackwardError(a.view(), plain->solution->view(), b_view);
  auto refined = Refine(a, b, RefinePrecision::kInput);
  ASSERT_TRUE(refined.ok()) << refined.status();
  const Refinement& r = *refined->refinement;
  EXPECT_EQ(r.factor_precision, "float64");
  EXPECT_TRUE(r.converged) << r.backward_error << " (plain " << plain_error << ")";
  EXPECT_LE(r.backward_error, 4 * 0x1p-53);
  EXPECT_GT(plain_error, 1e3 * r.backward_error);
  EXPECT_GE(r.iterations, 1);
}

TEST_P(RefineTest, SamePrecisionFloat64OnAnIllConditionedSystemEndsAtWorkingPrecision) {
  constexpr int64_t kN = 160;
  const Matrix a = GradedMatrix<double>(kN, 1e12, 61);
  const Matrix b = RandomMatrix<double>(kN, 3, 62);
  const MatrixView b_view = b.view();
  auto plain = backend().Factorize(a.view(), {}, &b_view, nullptr);
  ASSERT_TRUE(plain.ok());
  const double plain_error = cpu::RefinedBackwardError(a.view(), plain->solution->view(), b_view);
  auto refined = Refine(a, b, RefinePrecision::kInput);
  ASSERT_TRUE(refined.ok()) << refined.status();
  EXPECT_TRUE(refined->refinement->converged) << refined->refinement->backward_error;
  EXPECT_LE(refined->refinement->backward_error, plain_error);
  EXPECT_LE(refined->refinement->backward_error, 4 * 0x1p-53);
}

TEST_P(RefineTest, MaxIterationsBoundsTheSteps) {
  constexpr int64_t kN = 40;
  const Matrix a = WilkinsonMatrix(kN);
  const Matrix b = RandomMatrix<double>(kN, 1, 71);
  auto result = Refine(a, b, RefinePrecision::kInput, 1);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LE(result->refinement->iterations, 1);
}

TEST_P(RefineTest, TensorCorePrecisionsRunAsFloat32OnTheCpu) {
  constexpr int64_t kN = 64;
  const Matrix a = GradedMatrix<double>(kN, 1e2, 81);
  const Matrix b = RandomMatrix<double>(kN, 1, 82);
  for (const RefinePrecision precision : {RefinePrecision::kTf32, RefinePrecision::kFloat16}) {
    auto result = Refine(a, b, precision);
    ASSERT_TRUE(result.ok()) << result.status();
    const std::string want = GetParam() == "cpu"                   ? "float32"
                             : precision == RefinePrecision::kTf32 ? "tf32"
                                                                   : "float16";
    if (!result->refinement->fell_back) {
      EXPECT_EQ(result->refinement->factor_precision, want);
    }
    EXPECT_TRUE(result->refinement->converged) << result->refinement->backward_error;
  }
}

TEST_P(RefineTest, RefusesWhatItCannotRefine) {
  const Matrix a = GradedMatrix<double>(8, 10, 91);
  const Matrix b = RandomMatrix<double>(8, 1, 92);
  const MatrixView b_view = b.view();
  const RefineOptions on{.enabled = true};
  auto no_rhs = backend().Factorize(a.view(), {.refine = on}, nullptr, nullptr);
  EXPECT_EQ(no_rhs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_rhs.status().message(), HasSubstr("rhs"));
  auto cholesky = backend().Factorize(
      a.view(), {.kind = FactorizationKind::kCholesky, .refine = on}, &b_view, nullptr);
  EXPECT_EQ(cholesky.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cholesky.status().message(), HasSubstr("refine"));
  auto batch = backend().Factorize(a.view(), {.batch_count = 2, .refine = on}, &b_view, nullptr);
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(batch.status().message(), HasSubstr("batch_count"));
  auto precision_alone = backend().Factorize(
      a.view(), {.refine = {.factor_precision = RefinePrecision::kFloat32}}, &b_view, nullptr);
  EXPECT_EQ(precision_alone.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(precision_alone.status().message(), HasSubstr("refine_factor_precision"));
}

TEST_P(RefineTest, SingularMatrixIsAFailedPrecondition) {
  const Matrix a(4, 4, DType::kFloat64);
  const Matrix b = RandomMatrix<double>(4, 1, 93);
  for (const RefinePrecision precision : {RefinePrecision::kInput, RefinePrecision::kFloat32}) {
    auto result = Refine(a, b, precision);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
  }
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(RefineTest);

TEST(RefineThreshold, IsFourUnitsSamePrecisionAndSqrtNOnTheMixedPath) {
  EXPECT_EQ(RefineThreshold(DType::kFloat32, 100, RefinePrecision::kInput), 4 * 0x1p-24);
  EXPECT_EQ(RefineThreshold(DType::kFloat64, 100, RefinePrecision::kInput), 4 * 0x1p-53);
  EXPECT_EQ(RefineThreshold(DType::kFloat64, 100, RefinePrecision::kFloat32), 10 * 0x1p-53);
  EXPECT_EQ(RefineThreshold(DType::kFloat64, 4, RefinePrecision::kFloat32), 4 * 0x1p-53);
  EXPECT_EQ(RefineThreshold(DType::kFloat32, 100, RefinePrecision::kFloat32), 4 * 0x1p-24);
}

TEST(RefineStoppingRule, AlwaysTakesOneStepThenStopsOnceXIsSettled) {
  RefineStoppingRule rule(1e-16, 1e-16, 10);
  EXPECT_FALSE(rule.Done(1e-17, 1.0));  // small backward error, but X may still be inaccurate
  rule.Stepped(1e-12);
  EXPECT_FALSE(rule.Done(1e-17, 1.0));  // the last correction still moved X
  rule.Stepped(1e-17);
  EXPECT_TRUE(rule.Done(1e-17, 1.0));
  EXPECT_EQ(rule.steps(), 2);
}

TEST(RefineStoppingRule, StopsOnTheBudgetOrWhenCorrectionsStopHalving) {
  RefineStoppingRule budget(1e-16, 1e-16, 1);
  budget.Stepped(1.0);
  EXPECT_TRUE(budget.Done(1.0, 1.0));
  RefineStoppingRule stagnation(1e-16, 1e-16, 10);
  stagnation.Stepped(1e-3);
  EXPECT_FALSE(stagnation.Done(1e-5, 1.0));
  stagnation.Stepped(0.4e-3);
  EXPECT_FALSE(stagnation.Done(1e-6, 1.0));
  stagnation.Stepped(0.3e-3);
  EXPECT_TRUE(stagnation.Done(1e-6, 1.0));
  RefineStoppingRule not_finite(1e-16, 1e-16, 10);
  EXPECT_TRUE(not_finite.Done(std::numeric_limits<double>::infinity(), 1.0));
}

}  // namespace
}  // namespace matrixd
