// Backend::Solve with kept factorizations, on every backend and floating dtype. The factors are
// kept where the backend keeps resident matrices (device memory on CUDA, so the solve reads them
// in place), and every solve is checked against the same backend's Factorize with a right-hand
// side and against a long double reference.
#include <algorithm>
#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/factorization.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "core/resident_matrix.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"
#include "tests/core/dense_test_support.h"

namespace matrixd {
namespace {

using ::matrixd::testing::ConjugateTranspose;
using ::matrixd::testing::DistanceNorm;
using ::matrixd::testing::Eps;
using ::matrixd::testing::ForEachFloatingType;
using ::matrixd::testing::HermitianPositiveDefinite;
using ::matrixd::testing::Norm;
using ::matrixd::testing::Product;
using ::matrixd::testing::RandomMatrix;
using ::matrixd::testing::SolveWide;
using ::matrixd::testing::Transpose;
using ::matrixd::testing::Wide;
using ::matrixd::testing::WideMatrix;
using ::matrixd::testing::Widen;

// The constant c of the c * n * eps bounds.
constexpr long double kSlack = 10;

// A factorization kept as the server keeps one: each of its parts a resident matrix of the
// backend, viewed where it lives.
class KeptFactorization {
 public:
  static absl::StatusOr<KeptFactorization> Keep(Backend& backend, const FactorizeResult& result,
                                                const Matrix* input) {
    const MatrixView input_view = input != nullptr ? input->view() : MatrixView{};
    const FactorizationView host =
        FactorizationOf(result, input != nullptr ? &input_view : nullptr);
    KeptFactorization kept;
    kept.view_ = host;
    for (auto [from, to] :
         {std::pair{&host.factor, &kept.view_.factor}, std::pair{&host.r, &kept.view_.r},
          std::pair{&host.permutation, &kept.view_.permutation},
          std::pair{&host.input, &kept.view_.input}}) {
      if (from->rows == 0) continue;
      absl::StatusOr<std::unique_ptr<ResidentMatrix>> part =
          backend.AllocateResident(from->rows, from->cols, from->dtype, JobControl::kAnyDevice);
      if (!part.ok()) return part.status();
      if (absl::Status s = (*part)->Write(0, std::span(from->data, from->byte_size())); !s.ok()) {
        return s;
      }
      if (absl::Status s = (*part)->Flush(); !s.ok()) return s;
      *to = (*part)->view();
      kept.parts_.push_back(*std::move(part));
    }
    return kept;
  }

  const FactorizationView& view() const { return view_; }

 private:
  std::vector<std::unique_ptr<ResidentMatrix>> parts_;
  FactorizationView view_;
};

// Factorizes `a` (no right-hand side), keeps the factors with A, and solves with them.
absl::StatusOr<SolveResult> SolveKept(Backend& backend, const Matrix& a, FactorizationKind kind,
                                      const Matrix& b, const SolveOptions& options = {}) {
  absl::StatusOr<FactorizeResult> factors =
      backend.Factorize(a.view(), {.kind = kind}, nullptr, nullptr);
  if (!factors.ok()) return factors.status();
  absl::StatusOr<KeptFactorization> kept = KeptFactorization::Keep(backend, *factors, &a);
  if (!kept.ok()) return kept.status();
  return backend.Solve(kept->view(), b.view(), options, nullptr);
}

// The same backend's Factorize with a right-hand side.
Matrix FreshSolution(Backend& backend, const Matrix& a, FactorizationKind kind, const Matrix& b) {
  const MatrixView rhs = b.view();
  absl::StatusOr<FactorizeResult> result =
      backend.Factorize(a.view(), {.kind = kind}, &rhs, nullptr);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok() || !result->solution.has_value()) return Matrix();
  return *result->solution;
}

// A + n C with A random and C the cyclic shift (C[i, i + 1 mod n] = 1): a row permutation of a
// diagonally dominant matrix, so well conditioned (forward errors as small as backward ones), and
// partial pivoting must undo a permutation that is not its own inverse (a solve that ignored the
// permutation, or applied it the wrong way round, would fail).
template <typename T>
Matrix WellConditioned(int64_t n, uint64_t seed) {
  Matrix a = RandomMatrix<T>(n, n, seed);
  for (int64_t i = 0; i < n; ++i) a.As<T>()[i * n + (i + 1) % n] += T(static_cast<float>(n));
  return a;
}

// ||x - want|| <= slack * n * eps ||want||.
template <typename T>
void ExpectClose(const Matrix& x, const WideMatrix<Wide<T>>& want, int64_t n, long double slack) {
  ASSERT_EQ(x.rows(), want.rows);
  ASSERT_EQ(x.cols(), want.cols);
  EXPECT_LE(DistanceNorm(Widen<T>(x), want), slack * n * Eps<T>() * Norm(want));
}

class SolveTest : public testing::BackendTest {};

TEST_P(SolveTest, KeptLuMatchesFreshSolveAndLongDoubleReference) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    for (const int64_t n : {1, 40}) {
      SCOPED_TRACE(n);
      const Matrix a = WellConditioned<T>(n, 100 + n);
      const Matrix b = RandomMatrix<T>(n, 3, 200 + n);
      absl::StatusOr<SolveResult> result = SolveKept(backend(), a, FactorizationKind::kLu, b);
      ASSERT_TRUE(result.ok()) << result.status();
      ExpectClose<T>(result->x, Widen<T>(FreshSolution(backend(), a, FactorizationKind::kLu, b)), n,
                     kSlack);
      ExpectClose<T>(result->x, SolveWide(Widen<T>(a), Widen<T>(b)), n, kSlack);
      EXPECT_GT(result->stats.flops, 0.0);
      EXPECT_EQ(result->stats.backend, GetParam());
    }
  });
}

TEST_P(SolveTest, KeptLuSolvesTransposedAndConjugateTransposedSystems) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    constexpr int64_t kN = 30;
    const Matrix a = WellConditioned<T>(kN, 7);
    const Matrix b = RandomMatrix<T>(kN, 4, 8);
    for (const auto& [transpose, op_a] :
         {std::pair{SolveTranspose::kTranspose, Transpose(Widen<T>(a))},
          std::pair{SolveTranspose::kConjugateTranspose, ConjugateTranspose(Widen<T>(a))}}) {
      SCOPED_TRACE(static_cast<int>(transpose));
      absl::StatusOr<SolveResult> result =
          SolveKept(backend(), a, FactorizationKind::kLu, b, {.transpose = transpose});
      ASSERT_TRUE(result.ok()) << result.status();
      ExpectClose<T>(result->x, SolveWide(op_a, Widen<T>(b)), kN, kSlack);
    }
  });
}

TEST_P(SolveTest, KeptCholeskyMatchesFreshSolveAndLongDoubleReference) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    for (const int64_t n : {1, 40}) {
      SCOPED_TRACE(n);
      const Matrix a = HermitianPositiveDefinite<T>(n, 300 + n);
      const Matrix b = RandomMatrix<T>(n, 2, 400 + n);
      absl::StatusOr<SolveResult> result = SolveKept(backend(), a, FactorizationKind::kCholesky, b);
      ASSERT_TRUE(result.ok()) << result.status();
      ExpectClose<T>(result->x,
                     Widen<T>(FreshSolution(backend(), a, FactorizationKind::kCholesky, b)), n,
                     kSlack);
      ExpectClose<T>(result->x, SolveWide(Widen<T>(a), Widen<T>(b)), n, kSlack);
    }
  });
}

TEST_P(SolveTest, KeptQrSolvesLeastSquaresAsFreshSolveAndNormalEquations) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    for (const auto& [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {50, 30}, {30, 30}}) {
      SCOPED_TRACE(m);
      const Matrix a = RandomMatrix<T>(m, n, 500 + m);
      const Matrix b = RandomMatrix<T>(m, 3, 600 + m);
      absl::StatusOr<SolveResult> result = SolveKept(backend(), a, FactorizationKind::kQr, b);
      ASSERT_TRUE(result.ok()) << result.status();
      ASSERT_EQ(result->x.rows(), n);
      ExpectClose<T>(result->x, Widen<T>(FreshSolution(backend(), a, FactorizationKind::kQr, b)), m,
                     10 * kSlack);
      const auto a_h = ConjugateTranspose(Widen<T>(a));
      ExpectClose<T>(result->x, SolveWide(Product(a_h, Widen<T>(a)), Product(a_h, Widen<T>(b))), m,
                     10 * kSlack);
    }
  });
}

TEST_P(SolveTest, ManyRightHandSidesAtOnce) {
  constexpr int64_t kN = 20;
  constexpr int64_t kColumns = 300;
  const Matrix a = WellConditioned<double>(kN, 9);
  const Matrix b = RandomMatrix<double>(kN, kColumns, 10);
  for (const FactorizationKind kind : {FactorizationKind::kLu, FactorizationKind::kQr}) {
    absl::StatusOr<SolveResult> result = SolveKept(backend(), a, kind, b);
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectClose<double>(result->x, SolveWide(Widen<double>(a), Widen<double>(b)), kN, kSlack);
  }
}

TEST_P(SolveTest, SingularLuIsRefusedNamingTheZeroPivot) {
  Matrix a = RandomMatrix<double>(5, 5, 31);
  for (int64_t i = 0; i < 5; ++i) a.As<double>()[i * 5 + 2] = 0.0;
  absl::StatusOr<SolveResult> result =
      SolveKept(backend(), a, FactorizationKind::kLu, RandomMatrix<double>(5, 1, 32));
  ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
  EXPECT_NE(result.status().message().find("singular"), std::string::npos) << result.status();
  EXPECT_NE(result.status().message().find("column 2"), std::string::npos) << result.status();
}

TEST_P(SolveTest, RankDeficientQrIsRefused) {
  Matrix a = RandomMatrix<double>(6, 4, 33);
  for (int64_t i = 0; i < 6; ++i) a.As<double>()[i * 4 + 0] = 0.0;
  absl::StatusOr<SolveResult> result =
      SolveKept(backend(), a, FactorizationKind::kQr, RandomMatrix<double>(6, 1, 34));
  ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
  EXPECT_NE(result.status().message().find("R[0,0]"), std::string::npos) << result.status();
}

TEST_P(SolveTest, ResidualIsSmallForASolveAndTheLeastSquaresMisfitOtherwise) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    constexpr int64_t kN = 40;
    const Matrix a = WellConditioned<T>(kN, 41);
    const Matrix b = RandomMatrix<T>(kN, 2, 42);
    absl::StatusOr<SolveResult> square =
        SolveKept(backend(), a, FactorizationKind::kLu, b, {.residual = true});
    ASSERT_TRUE(square.ok()) << square.status();
    ASSERT_TRUE(square->residual.has_value());
    EXPECT_LE(*square->residual, static_cast<double>(kSlack * kN * Eps<T>()));

    // A tall least-squares fit leaves a residual of order one, known in long double.
    const Matrix tall = RandomMatrix<T>(kN, 5, 43);
    absl::StatusOr<SolveResult> fit =
        SolveKept(backend(), tall, FactorizationKind::kQr, b, {.residual = true});
    ASSERT_TRUE(fit.ok()) << fit.status();
    ASSERT_TRUE(fit->residual.has_value());
    const auto wide_a = Widen<T>(tall);
    const auto wide_x = Widen<T>(fit->x);
    const auto wide_b = Widen<T>(b);
    const long double want = DistanceNorm(Product(wide_a, wide_x), wide_b) /
                             (Norm(wide_a) * Norm(wide_x) + Norm(wide_b));
    EXPECT_GT(want, 0.01L);
    EXPECT_NEAR(*fit->residual, static_cast<double>(want), static_cast<double>(want) * 1e-3);
  });
}

TEST_P(SolveTest, MismatchedRightHandSidesAndOptionsAreInvalidArguments) {
  const Matrix a = WellConditioned<double>(4, 51);
  const Matrix spd = HermitianPositiveDefinite<double>(4, 52);
  const auto expect_invalid = [](const absl::StatusOr<SolveResult>& result, const char* words) {
    ASSERT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
    EXPECT_NE(result.status().message().find(words), std::string::npos) << result.status();
  };
  expect_invalid(SolveKept(backend(), a, FactorizationKind::kLu, RandomMatrix<double>(5, 1, 1)),
                 "want 4 rows");
  expect_invalid(SolveKept(backend(), a, FactorizationKind::kLu, RandomMatrix<float>(4, 1, 1)),
                 "rhs.dtype is float32");
  expect_invalid(
      SolveKept(backend(), spd, FactorizationKind::kCholesky, RandomMatrix<double>(4, 1, 1),
                {.transpose = SolveTranspose::kTranspose}),
      "LU factorizations only");
  expect_invalid(SolveKept(backend(), RandomMatrix<double>(5, 3, 1), FactorizationKind::kLu,
                           RandomMatrix<double>(5, 1, 1)),
                 "needs a square one");
  expect_invalid(SolveKept(backend(), RandomMatrix<double>(3, 5, 1), FactorizationKind::kQr,
                           RandomMatrix<double>(3, 1, 1)),
                 "rows >= cols");

  absl::StatusOr<FactorizeResult> factors =
      backend().Factorize(a.view(), {.kind = FactorizationKind::kLu}, nullptr, nullptr);
  ASSERT_TRUE(factors.ok()) << factors.status();
  absl::StatusOr<KeptFactorization> without_input =
      KeptFactorization::Keep(backend(), *factors, nullptr);
  ASSERT_TRUE(without_input.ok()) << without_input.status();
  const Matrix b = RandomMatrix<double>(4, 1, 2);
  expect_invalid(backend().Solve(without_input->view(), b.view(), {.residual = true}, nullptr),
                 "keep_input");
}

TEST_P(SolveTest, SolutionLandsInTheCallersResidentOutput) {
  const Matrix a = WellConditioned<double>(16, 61);
  const Matrix b = RandomMatrix<double>(16, 2, 62);
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> output =
      backend().AllocateResident(16, 2, DType::kFloat64, JobControl::kAnyDevice);
  ASSERT_TRUE(output.ok()) << output.status();
  absl::StatusOr<SolveResult> result =
      SolveKept(backend(), a, FactorizationKind::kLu, b, {.output = output->get()});
  ASSERT_TRUE(result.ok()) << result.status();
  // A device backend writes X in place; the CPU backend returns it for the caller to store.
  Matrix x = result->x;
  if (x.empty()) {
    x = Matrix(16, 2, DType::kFloat64);
    ASSERT_TRUE((*output)->Read(0, std::span(x.mutable_bytes(), x.byte_size())).ok());
  }
  ExpectClose<double>(x, SolveWide(Widen<double>(a), Widen<double>(b)), 16, kSlack);
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(SolveTest);

}  // namespace
}  // namespace matrixd
