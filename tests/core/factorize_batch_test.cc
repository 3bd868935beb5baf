// Batches of small matrices (FactorizeOptions::batch_count) on every backend: each matrix of a
// batch is checked on its own against long double arithmetic (P A = L U, L L^H = A, Q R = A,
// backward errors of the solves) and against the unbatched call; singular, indefinite and
// rank-deficient members are named by their index; bad batch shapes are rejected.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cpu/cpu_backend.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "core/validation.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"
#include "tests/core/dense_test_support.h"

namespace matrixd {
namespace {

// The constant c of the c * n * eps bounds.
constexpr long double kSlack = 10;

using ::matrixd::testing::ConjugateTranspose;
using ::matrixd::testing::DistanceNorm;
using ::matrixd::testing::Eps;
using ::matrixd::testing::ExpectQrOf;
using ::matrixd::testing::ExpectSolves;
using ::matrixd::testing::ForEachFloatingType;
using ::matrixd::testing::HermitianPositiveDefinite;
using ::matrixd::testing::Norm;
using ::matrixd::testing::Product;
using ::matrixd::testing::RandomMatrix;
using ::matrixd::testing::Wide;
using ::matrixd::testing::WideMatrix;
using ::matrixd::testing::Widen;

// ---- Inputs ----

// The matrices one above the other, as a batch holds them. REQUIRES: one shape and dtype.
Matrix Stack(const std::vector<Matrix>& matrices) {
  const Matrix& first = matrices.front();
  Matrix stacked(first.rows() * static_cast<int64_t>(matrices.size()), first.cols(), first.dtype());
  for (size_t i = 0; i < matrices.size(); ++i) {
    std::memcpy(stacked.mutable_bytes() + i * first.byte_size(), matrices[i].bytes(),
                first.byte_size());
  }
  return stacked;
}

// Matrix `index` of a stack of rows x stacked.cols() matrices.
Matrix Slice(const Matrix& stacked, int64_t index, int64_t rows) {
  const size_t bytes = static_cast<size_t>(rows * stacked.cols()) * ElementSize(stacked.dtype());
  return Matrix::FromBytes(rows, stacked.cols(), stacked.dtype(),
                           {stacked.bytes() + static_cast<size_t>(index) * bytes, bytes});
}

template <typename T>
std::vector<Matrix> RandomMatrices(int64_t count, int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<Matrix> matrices;
  for (int64_t i = 0; i < count; ++i) {
    matrices.push_back(RandomMatrix<T>(rows, cols, seed * 100003 + static_cast<uint64_t>(i)));
  }
  return matrices;
}

void SetColumnToZero(Matrix& a, int64_t column) {
  const size_t element = ElementSize(a.dtype());
  for (int64_t i = 0; i < a.rows(); ++i) {
    std::memset(a.mutable_bytes() + static_cast<size_t>(i * a.cols() + column) * element, 0,
                element);
  }
}

// ---- Checks ----

// P A = L U in long double for one matrix of a batch: `permutation` is a permutation, L unit
// lower triangular, and the backward error small.
template <typename T>
void ExpectLuOf(const Matrix& a, const Matrix& lu, std::span<const int64_t> permutation) {
  const int64_t n = a.rows();
  std::vector<int64_t> sorted(permutation.begin(), permutation.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(static_cast<size_t>(n));
  std::iota(identity.begin(), identity.end(), int64_t{0});
  ASSERT_EQ(sorted, identity) << "not a permutation of the rows";
  const auto wide_lu = Widen<T>(lu);
  WideMatrix<Wide<T>> l(n, n);
  WideMatrix<Wide<T>> u(n, n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) (j < i ? l(i, j) : u(i, j)) = wide_lu(i, j);
    l(i, i) = 1;
  }
  const auto wide_a = Widen<T>(a);
  WideMatrix<Wide<T>> pa(n, n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) pa(i, j) = wide_a(permutation[i], j);
  }
  const long double norm = std::max(Norm(wide_a), std::numeric_limits<long double>::min());
  EXPECT_LE(DistanceNorm(pa, Product(l, u)) / norm, kSlack * n * Eps<T>());
}

// ||x - y|| <= tolerance ||y||.
template <typename T>
void ExpectClose(const Matrix& x, const Matrix& y, long double tolerance) {
  ASSERT_EQ(x.rows(), y.rows());
  ASSERT_EQ(x.cols(), y.cols());
  const auto wide_y = Widen<T>(y);
  EXPECT_LE(DistanceNorm(Widen<T>(x), wide_y), tolerance * Norm(wide_y));
}

FactorizeOptions Batch(FactorizationKind kind, int64_t count) {
  return {.kind = kind, .batch_count = count};
}

// ---- Tests ----

class FactorizeBatchTest : public testing::BackendTest {};

TEST_P(FactorizeBatchTest, LuOfThousandRandomMatricesMatchesUnbatchedCallsWithSolves) {
  using T = double;
  for (const int64_t n : {8, 32}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    constexpr int64_t kCount = 1000;
    const std::vector<Matrix> as = RandomMatrices<T>(kCount, n, n, 1 + n);
    const std::vector<Matrix> bs = RandomMatrices<T>(kCount, n, 2, 2 + n);
    const Matrix a = Stack(as);
    const Matrix b = Stack(bs);
    const MatrixView rhs = b.view();
    const auto batch =
        backend().Factorize(a.view(), Batch(FactorizationKind::kLu, kCount), &rhs, nullptr);
    ASSERT_TRUE(batch.ok()) << batch.status();
    EXPECT_EQ(batch->kind, FactorizationKind::kLu);
    ASSERT_EQ(batch->lu.rows(), kCount * n);
    ASSERT_EQ(batch->lu.cols(), n);
    ASSERT_EQ(batch->permutation.size(), static_cast<size_t>(kCount * n));
    ASSERT_EQ(batch->singular_columns, std::vector<int64_t>(kCount, -1));
    EXPECT_FALSE(batch->singular_column.has_value());
    ASSERT_TRUE(batch->solution.has_value());
    ASSERT_EQ(batch->solution->rows(), kCount * n);
    ASSERT_EQ(batch->solution->cols(), 2);
    for (int64_t i = 0; i < kCount; ++i) {
      SCOPED_TRACE("matrix " + std::to_string(i));
      const Matrix lu = Slice(batch->lu, i, n);
      const std::span<const int64_t> permutation(batch->permutation.data() + i * n, n);
      ExpectLuOf<T>(as[i], lu, permutation);
      const Matrix x = Slice(*batch->solution, i, n);
      ExpectSolves<T>(as[i], bs[i], x, kSlack);

      const MatrixView one_rhs = bs[i].view();
      const auto single =
          backend().Factorize(as[i].view(), {.kind = FactorizationKind::kLu}, &one_rhs, nullptr);
      ASSERT_TRUE(single.ok()) << single.status();
      EXPECT_TRUE(std::equal(permutation.begin(), permutation.end(), single->permutation.begin()));
      // The same pivots, so the same factors up to rounding (bitwise on the CPU, where both
      // calls run the same LAPACK routine); random 32x32 matrices are well enough conditioned
      // for 1e-9.
      ExpectClose<T>(lu, single->lu, 1e-9);
      ExpectClose<T>(x, *single->solution, 1e-9);
    }
    EXPECT_GT(batch->stats.flops, 0.0);
  }
}

// Over 16 MiB: the CUDA backend pins such inputs and outputs in place for the transfers.
TEST_P(FactorizeBatchTest, LuOfALargeBatchReconstructsAndSolves) {
  using T = double;
  constexpr int64_t kCount = 9000;
  constexpr int64_t kN = 16;
  const std::vector<Matrix> as = RandomMatrices<T>(kCount, kN, kN, 34);
  const std::vector<Matrix> bs = RandomMatrices<T>(kCount, kN, 1, 35);
  const Matrix a = Stack(as);
  ASSERT_GT(a.byte_size(), size_t{16} << 20);
  const Matrix b = Stack(bs);
  const MatrixView rhs = b.view();
  const auto batch =
      backend().Factorize(a.view(), Batch(FactorizationKind::kLu, kCount), &rhs, nullptr);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_TRUE(batch->solution.has_value());
  for (int64_t i = 0; i < kCount; i += 97) {
    SCOPED_TRACE("matrix " + std::to_string(i));
    ExpectLuOf<T>(as[i], Slice(batch->lu, i, kN), {batch->permutation.data() + i * kN, kN});
    ExpectSolves<T>(as[i], bs[i], Slice(*batch->solution, i, kN), kSlack);
  }
  // The last matrix too: a slicing error shows at the end first.
  ExpectLuOf<T>(as.back(), Slice(batch->lu, kCount - 1, kN),
                {batch->permutation.data() + (kCount - 1) * kN, kN});
}

TEST_P(FactorizeBatchTest, LuOfEveryDTypeReconstructsAndSolves) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    constexpr int64_t kCount = 40;
    constexpr int64_t kN = 6;
    const std::vector<Matrix> as = RandomMatrices<T>(kCount, kN, kN, 3);
    const std::vector<Matrix> bs = RandomMatrices<T>(kCount, kN, 3, 4);
    const Matrix a = Stack(as);
    const Matrix b = Stack(bs);
    const MatrixView rhs = b.view();
    const auto batch =
        backend().Factorize(a.view(), Batch(FactorizationKind::kLu, kCount), &rhs, nullptr);
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_EQ(batch->lu.dtype(), a.dtype());
    ASSERT_TRUE(batch->solution.has_value());
    for (int64_t i = 0; i < kCount; ++i) {
      SCOPED_TRACE("matrix " + std::to_string(i));
      ExpectLuOf<T>(as[i], Slice(batch->lu, i, kN), {batch->permutation.data() + i * kN, kN});
      ExpectSolves<T>(as[i], bs[i], Slice(*batch->solution, i, kN), kSlack);
    }
  });
}

TEST_P(FactorizeBatchTest, LuHoldsForHugeAndTinyMatricesSideBySide) {
  using T = double;
  constexpr int64_t kN = 12;
  std::vector<Matrix> as;
  for (int i = 0; i < 9; ++i) {
    // 2^900, 1 and 2^-900 in turn: each matrix is factored on its own, whatever its neighbours.
    as.push_back(RandomMatrix<T>(kN, kN, 50 + i, std::ldexp(1.0, 900 * (i % 3 - 1))));
  }
  const Matrix a = Stack(as);
  const auto batch =
      backend().Factorize(a.view(), Batch(FactorizationKind::kLu, 9), nullptr, nullptr);
  ASSERT_TRUE(batch.ok()) << batch.status();
  for (int64_t i = 0; i < 9; ++i) {
    SCOPED_TRACE("matrix " + std::to_string(i));
    ExpectLuOf<T>(as[i], Slice(batch->lu, i, kN), {batch->permutation.data() + i * kN, kN});
  }
}

TEST_P(FactorizeBatchTest, LuReportsEachSingularMatrixAndStillFactorsIt) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    constexpr int64_t kN = 8;
    std::vector<Matrix> as = RandomMatrices<T>(20, kN, kN, 5);
    // A zero column stays exactly zero through every update: U[2,2] = 0 exactly.
    SetColumnToZero(as[3], 2);
    // A zero row is never a pivot while a non-zero one is left: it ends last, U[7,7] = 0.
    std::memset(as[11].mutable_bytes() + 4 * kN * sizeof(T), 0, kN * sizeof(T));
    // All zero: every pivot is zero, the first at column 0.
    as[16] = Matrix(kN, kN, DTypeOf<T>());
    const Matrix a = Stack(as);
    const auto batch =
        backend().Factorize(a.view(), Batch(FactorizationKind::kLu, 20), nullptr, nullptr);
    ASSERT_TRUE(batch.ok()) << batch.status();
    std::vector<int64_t> want(20, -1);
    want[3] = 2;
    want[11] = kN - 1;
    want[16] = 0;
    EXPECT_EQ(batch->singular_columns, want);
    EXPECT_EQ(batch->singular_column, std::optional<int64_t>(2));
    for (int64_t i = 0; i < 20; ++i) {
      SCOPED_TRACE("matrix " + std::to_string(i));
      ExpectLuOf<T>(as[i], Slice(batch->lu, i, kN), {batch->permutation.data() + i * kN, kN});
    }
  });
}

TEST_P(FactorizeBatchTest, LuSolveWithSingularMatrixNamesItsIndex) {
  using T = double;
  std::vector<Matrix> as = RandomMatrices<T>(10, 5, 5, 6);
  SetColumnToZero(as[7], 1);
  SetColumnToZero(as[9], 3);
  const Matrix a = Stack(as);
  const Matrix b = Stack(RandomMatrices<T>(10, 5, 1, 7));
  const MatrixView rhs = b.view();
  const auto batch =
      backend().Factorize(a.view(), Batch(FactorizationKind::kLu, 10), &rhs, nullptr);
  ASSERT_EQ(batch.status().code(), absl::StatusCode::kFailedPrecondition) << batch.status();
  EXPECT_NE(batch.status().message().find("matrix 7 of the batch is singular"), std::string::npos)
      << batch.status();
  EXPECT_NE(batch.status().message().find("column 1"), std::string::npos) << batch.status();
}

TEST_P(FactorizeBatchTest, CholeskyReconstructsEachMatrixAndSolves) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    constexpr int64_t kCount = 50;
    for (const int64_t n : {1, 9}) {
      SCOPED_TRACE("n = " + std::to_string(n));
      std::vector<Matrix> as;
      for (int64_t i = 0; i < kCount; ++i) as.push_back(HermitianPositiveDefinite<T>(n, 8 + i));
      const std::vector<Matrix> bs = RandomMatrices<T>(kCount, n, 2, 9);
      const Matrix a = Stack(as);
      const Matrix b = Stack(bs);
      const MatrixView rhs = b.view();
      const auto batch =
          backend().Factorize(a.view(), Batch(FactorizationKind::kCholesky, kCount), &rhs, nullptr);
      ASSERT_TRUE(batch.ok()) << batch.status();
      EXPECT_EQ(batch->kind, FactorizationKind::kCholesky);
      ASSERT_EQ(batch->l.rows(), kCount * n);
      ASSERT_EQ(batch->l.cols(), n);
      EXPECT_TRUE(batch->singular_columns.empty());
      ASSERT_TRUE(batch->solution.has_value());
      for (int64_t i = 0; i < kCount; ++i) {
        SCOPED_TRACE("matrix " + std::to_string(i));
        const auto l = Widen<T>(Slice(batch->l, i, n));
        for (int64_t r = 0; r < n; ++r) {
          EXPECT_GT(std::real(l(r, r)), 0) << "diagonal " << r;
          for (int64_t c = r + 1; c < n; ++c) EXPECT_EQ(l(r, c), Wide<T>(0)) << r << "," << c;
        }
        const auto wide_a = Widen<T>(as[i]);
        EXPECT_LE(DistanceNorm(Product(l, ConjugateTranspose(l)), wide_a) / Norm(wide_a),
                  kSlack * n * Eps<T>());
        ExpectSolves<T>(as[i], bs[i], Slice(*batch->solution, i, n), kSlack);
      }
    }
  });
}

TEST_P(FactorizeBatchTest, CholeskyWithIndefiniteMatricesNamesTheFirstIndex) {
  using T = double;
  constexpr int64_t kN = 4;
  std::vector<Matrix> as;
  for (int64_t i = 0; i < 30; ++i) as.push_back(HermitianPositiveDefinite<T>(kN, 10 + i));
  // diag(1, 1, -1, 1): the leading minor of order 3 is negative.
  as[17] = Matrix::FromValues<T>(kN, kN,
                                 std::vector<T>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1});
  as[25] = Matrix(kN, kN, DTypeOf<T>());
  const Matrix a = Stack(as);
  for (const bool solve : {false, true}) {
    SCOPED_TRACE(solve ? "with a solve" : "factors only");
    const Matrix b = RandomMatrix<T>(30 * kN, 1, 11);
    const MatrixView rhs = b.view();
    const auto batch = backend().Factorize(a.view(), Batch(FactorizationKind::kCholesky, 30),
                                           solve ? &rhs : nullptr, nullptr);
    ASSERT_EQ(batch.status().code(), absl::StatusCode::kFailedPrecondition) << batch.status();
    EXPECT_NE(batch.status().message().find("matrix 17 of the batch is not positive definite"),
              std::string::npos)
        << batch.status();
    EXPECT_NE(batch.status().message().find("order 3"), std::string::npos) << batch.status();
  }
}

TEST_P(FactorizeBatchTest, QrReconstructsTallSquareAndWideMatrices) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    constexpr int64_t kCount = 30;
    const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {6, 4}, {5, 5}, {3, 6}, {16, 16}};
    for (const auto& [m, n] : shapes) {
      SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n));
      const int64_t k = std::min(m, n);
      const std::vector<Matrix> as = RandomMatrices<T>(kCount, m, n, 12 + m * 10 + n);
      const Matrix a = Stack(as);
      const auto batch =
          backend().Factorize(a.view(), Batch(FactorizationKind::kQr, kCount), nullptr, nullptr);
      ASSERT_TRUE(batch.ok()) << batch.status();
      EXPECT_EQ(batch->kind, FactorizationKind::kQr);
      ASSERT_EQ(batch->q.rows(), kCount * m);
      ASSERT_EQ(batch->q.cols(), k);
      ASSERT_EQ(batch->r.rows(), kCount * k);
      ASSERT_EQ(batch->r.cols(), n);
      EXPECT_FALSE(batch->solution.has_value());
      for (int64_t i = 0; i < kCount; ++i) {
        SCOPED_TRACE("matrix " + std::to_string(i));
        ExpectQrOf<T>(as[i], Slice(batch->q, i, m), Slice(batch->r, i, k), kSlack);
      }
    }
  });
}

TEST_P(FactorizeBatchTest, QrSolveSatisfiesNormalEquationsForEachMatrix) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    constexpr int64_t kCount = 25;
    constexpr int64_t kM = 9;
    constexpr int64_t kN = 4;
    const std::vector<Matrix> as = RandomMatrices<T>(kCount, kM, kN, 13);
    const std::vector<Matrix> bs = RandomMatrices<T>(kCount, kM, 2, 14);
    const Matrix a = Stack(as);
    const Matrix b = Stack(bs);
    const MatrixView rhs = b.view();
    const auto batch =
        backend().Factorize(a.view(), Batch(FactorizationKind::kQr, kCount), &rhs, nullptr);
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_TRUE(batch->solution.has_value());
    ASSERT_EQ(batch->solution->rows(), kCount * kN);
    ASSERT_EQ(batch->solution->cols(), 2);
    for (int64_t i = 0; i < kCount; ++i) {
      SCOPED_TRACE("matrix " + std::to_string(i));
      // The least-squares residual is orthogonal to A's columns: ||A^H (A x - b)|| small
      // against ||A||^2 ||x|| + ||A|| ||b||.
      const auto wide_a = Widen<T>(as[i]);
      const auto wide_b = Widen<T>(bs[i]);
      const auto x = Widen<T>(Slice(*batch->solution, i, kN));
      auto residual = Product(wide_a, x);
      for (size_t e = 0; e < residual.v.size(); ++e) residual.v[e] -= wide_b.v[e];
      const long double scale = Norm(wide_a) * (Norm(wide_a) * Norm(x) + Norm(wide_b));
      EXPECT_LE(Norm(Product(ConjugateTranspose(wide_a), residual)),
                kSlack * kM * Eps<T>() * scale);
    }
  });
}

TEST_P(FactorizeBatchTest, QrSolveWithRankDeficientMatrixNamesItsIndex) {
  using T = double;
  std::vector<Matrix> as = RandomMatrices<T>(12, 7, 3, 15);
  SetColumnToZero(as[5], 1);
  const Matrix a = Stack(as);
  const Matrix b = Stack(RandomMatrices<T>(12, 7, 1, 16));
  const MatrixView rhs = b.view();
  const auto batch =
      backend().Factorize(a.view(), Batch(FactorizationKind::kQr, 12), &rhs, nullptr);
  ASSERT_EQ(batch.status().code(), absl::StatusCode::kFailedPrecondition) << batch.status();
  EXPECT_NE(batch.status().message().find("matrix 5 of the batch does not have full column rank"),
            std::string::npos)
      << batch.status();
}

TEST_P(FactorizeBatchTest, BatchOfOneMatchesTheUnbatchedCall) {
  using T = double;
  const Matrix a = RandomMatrix<T>(7, 7, 17);
  const Matrix b = RandomMatrix<T>(7, 2, 18);
  const MatrixView rhs = b.view();
  for (const FactorizationKind kind : {FactorizationKind::kLu, FactorizationKind::kQr}) {
    const auto single = backend().Factorize(a.view(), {.kind = kind}, &rhs, nullptr);
    const auto batch = backend().Factorize(a.view(), Batch(kind, 1), &rhs, nullptr);
    ASSERT_TRUE(single.ok()) << single.status();
    ASSERT_TRUE(batch.ok()) << batch.status();
    EXPECT_EQ(batch->permutation, single->permutation);
    if (kind == FactorizationKind::kLu) {
      EXPECT_EQ(batch->singular_columns, std::vector<int64_t>{-1});
      EXPECT_TRUE(single->singular_columns.empty());
      ExpectClose<T>(batch->lu, single->lu, 1e-12);
    } else {
      EXPECT_TRUE(batch->singular_columns.empty());
      ExpectClose<T>(batch->r, single->r, 1e-12);
      ExpectClose<T>(batch->q, single->q, 1e-12);
    }
    ExpectClose<T>(*batch->solution, *single->solution, 1e-12);
  }
  const Matrix spd = HermitianPositiveDefinite<T>(7, 19);
  const auto single =
      backend().Factorize(spd.view(), {.kind = FactorizationKind::kCholesky}, &rhs, nullptr);
  const auto batch =
      backend().Factorize(spd.view(), Batch(FactorizationKind::kCholesky, 1), &rhs, nullptr);
  ASSERT_TRUE(single.ok()) << single.status();
  ASSERT_TRUE(batch.ok()) << batch.status();
  ExpectClose<T>(batch->l, single->l, 1e-12);
  ExpectClose<T>(*batch->solution, *single->solution, 1e-12);
}

TEST_P(FactorizeBatchTest, RejectsRowsThatDoNotSplitIntoTheBatch) {
  const Matrix a = RandomMatrix<double>(10, 2, 20);
  const auto result =
      backend().Factorize(a.view(), Batch(FactorizationKind::kQr, 3), nullptr, nullptr);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  EXPECT_NE(result.status().message().find("batch_count = 3"), std::string::npos)
      << result.status();
}

TEST_P(FactorizeBatchTest, RejectsBatchedLuOfNonSquareMatrices) {
  const Matrix a = RandomMatrix<double>(12, 3, 21);  // four 3x3 or six 2x3 matrices
  EXPECT_TRUE(
      backend().Factorize(a.view(), Batch(FactorizationKind::kLu, 4), nullptr, nullptr).ok());
  EXPECT_EQ(backend()
                .Factorize(a.view(), Batch(FactorizationKind::kLu, 6), nullptr, nullptr)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(FactorizeBatchTest, ReturnsCancelledWhenCancelled) {
  const Matrix a = RandomMatrix<double>(40, 4, 22);
  JobControl control;
  control.Cancel();
  EXPECT_EQ(backend()
                .Factorize(a.view(), Batch(FactorizationKind::kLu, 10), nullptr, &control)
                .status()
                .code(),
            absl::StatusCode::kCancelled);
}

TEST_P(FactorizeBatchTest, CountsTheFlopsOfEveryMatrix) {
  const Matrix a = RandomMatrix<double>(10, 10, 23);
  const auto single =
      backend().Factorize(a.view(), {.kind = FactorizationKind::kLu}, nullptr, nullptr);
  const Matrix stacked = Stack(std::vector<Matrix>(6, a));
  const auto batch =
      backend().Factorize(stacked.view(), Batch(FactorizationKind::kLu, 6), nullptr, nullptr);
  ASSERT_TRUE(single.ok()) << single.status();
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_DOUBLE_EQ(batch->stats.flops, 6 * single->stats.flops);
  EXPECT_GE(batch->stats.bytes_moved, stacked.byte_size());
}

// ---- LU without a right-hand side (the CUDA backend pipelines it in chunks of 32 MiB) ----

// 5000 matrices of 32x32 float64 are 40 MiB: a whole chunk of 4096 matrices and a partial one.
// Without a right-hand side the factors, pivots and singular columns are bit for bit those of the
// call with one (on CUDA: the unchunked path, one getrfBatched call for all 5000), a singular
// member included.
TEST_P(FactorizeBatchTest, LuWithoutRhsGivesTheBitsOfTheSolvePathOverChunks) {
  using T = double;
  constexpr int64_t kCount = 5000;
  constexpr int64_t kN = 32;
  std::vector<Matrix> as = RandomMatrices<T>(kCount, kN, kN, 41);
  SetColumnToZero(as[4500], 3);  // in the partial chunk
  const Matrix a = Stack(as);
  const Matrix b = Stack(RandomMatrices<T>(kCount, kN, 1, 42));
  const MatrixView rhs = b.view();
  const auto with_rhs =
      backend().Factorize(a.view(), Batch(FactorizationKind::kLu, kCount), &rhs, nullptr);
  ASSERT_EQ(with_rhs.status().code(), absl::StatusCode::kFailedPrecondition);  // 4500 singular
  std::vector<Matrix> regular = as;
  regular[4500] = RandomMatrix<T>(kN, kN, 43);
  const Matrix a_regular = Stack(regular);
  for (const Matrix* stacked : {&a, &a_regular}) {
    SCOPED_TRACE(stacked == &a ? "with a singular member" : "all regular");
    const auto alone = backend().Factorize(stacked->view(), Batch(FactorizationKind::kLu, kCount),
                                           nullptr, nullptr);
    ASSERT_TRUE(alone.ok()) << alone.status();
    ASSERT_EQ(alone->lu.rows(), kCount * kN);
    ASSERT_EQ(alone->permutation.size(), static_cast<size_t>(kCount * kN));
    EXPECT_FALSE(alone->permutation_in_destination);
    for (const int64_t i : {int64_t{0}, int64_t{4095}, int64_t{4096}, int64_t{4500}, kCount - 1}) {
      SCOPED_TRACE("matrix " + std::to_string(i));
      const Matrix& original = stacked == &a ? as[i] : regular[i];
      ExpectLuOf<T>(original, Slice(alone->lu, i, kN), {alone->permutation.data() + i * kN, kN});
    }
    if (stacked == &a) {
      EXPECT_EQ(alone->singular_columns[4500], 3);
      EXPECT_EQ(alone->singular_column, 3);
      continue;
    }
    EXPECT_EQ(alone->singular_columns, std::vector<int64_t>(kCount, -1));
    const auto solved =
        backend().Factorize(stacked->view(), Batch(FactorizationKind::kLu, kCount), &rhs, nullptr);
    ASSERT_TRUE(solved.ok()) << solved.status();
    EXPECT_EQ(std::memcmp(alone->lu.bytes(), solved->lu.bytes(), alone->lu.byte_size()), 0);
    EXPECT_EQ(alone->permutation, solved->permutation);
    EXPECT_EQ(alone->singular_columns, solved->singular_columns);
  }
}

TEST_P(FactorizeBatchTest, LuWithoutRhsOfOneMatrixMatchesTheUnbatchedCall) {
  using T = double;
  const Matrix a = RandomMatrix<T>(9, 9, 44);
  const auto single =
      backend().Factorize(a.view(), {.kind = FactorizationKind::kLu}, nullptr, nullptr);
  const auto batch =
      backend().Factorize(a.view(), Batch(FactorizationKind::kLu, 1), nullptr, nullptr);
  ASSERT_TRUE(single.ok()) << single.status();
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->permutation, single->permutation);
  EXPECT_EQ(batch->singular_columns, std::vector<int64_t>{-1});
  ExpectClose<T>(batch->lu, single->lu, 1e-12);
  ExpectLuOf<T>(a, batch->lu, batch->permutation);
}

// The pivots go into a "permutation" destination when the backend takes it (CUDA's batched LU),
// else they come back in the result as before; the same values either way.
TEST_P(FactorizeBatchTest, LuPivotsLandInTheirDestinationBitForBit) {
  using T = double;
  constexpr int64_t kCount = 300;
  constexpr int64_t kN = 10;
  const Matrix a = Stack(RandomMatrices<T>(kCount, kN, kN, 45));
  const auto want =
      backend().Factorize(a.view(), Batch(FactorizationKind::kLu, kCount), nullptr, nullptr);
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<std::byte> lu(a.byte_size(), std::byte{0x7f});
  std::vector<int64_t> pivots(static_cast<size_t>(kCount * kN), -7);
  FactorizeOptions options = Batch(FactorizationKind::kLu, kCount);
  options.destinations.Add("lu", lu);
  options.destinations.Add("permutation", std::as_writable_bytes(std::span(pivots)));
  const auto got = backend().Factorize(a.view(), options, nullptr, nullptr);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->lu.borrowed());
  EXPECT_EQ(std::memcmp(lu.data(), want->lu.bytes(), lu.size()), 0);
  if (got->permutation_in_destination) {
    EXPECT_TRUE(got->permutation.empty());
    EXPECT_EQ(pivots, want->permutation);
  } else {
    EXPECT_EQ(got->permutation, want->permutation);
  }
  EXPECT_EQ(got->singular_columns, want->singular_columns);
}

// The real type of T's components (T itself, or R of std::complex<R>).
template <typename T>
struct ComponentOf {
  using type = T;
};
template <typename R>
struct ComponentOf<std::complex<R>> {
  using type = R;
};

// A backend that looks for NaN and Inf itself (Backend::FactorizeChecksFinite) refuses them with
// exactly ValidateFactorize's status: the first such entry in row-major order, for real and
// complex entries, in the first and in a later chunk.
TEST_P(FactorizeBatchTest, NonFiniteEntryIsRefusedAsValidationRefusesIt) {
  constexpr int64_t kCount = 5000;
  constexpr int64_t kN = 32;
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    SCOPED_TRACE(std::string(DTypeName(DTypeOf<T>())));
    const Matrix clean = Stack(RandomMatrices<T>(kCount, kN, kN, 46));
    const FactorizeOptions options = Batch(FactorizationKind::kLu, kCount);
    // (row, col) pairs, the earliest last: the earliest is the one named.
    for (const std::vector<std::pair<int64_t, int64_t>>& spots :
         std::vector<std::vector<std::pair<int64_t, int64_t>>>{
             {{7, 30}},
             {{kCount * kN - 1, kN - 1}, {4700 * kN + 5, 7}},
             {{4097 * kN, 0}, {3 * kN + 2, 31}}}) {
      Matrix a = Matrix::CopyOf(clean.view());
      using Component = typename ComponentOf<T>::type;
      for (size_t k = 0; k < spots.size(); ++k) {
        const auto [row, col] = spots[k];
        // Real: the entry; complex: its imaginary part (the second component).
        const size_t component = IsComplex(a.dtype()) ? 1 : 0;
        const Component bad = k % 2 == 0 ? std::numeric_limits<Component>::quiet_NaN()
                                         : std::numeric_limits<Component>::infinity();
        std::memcpy(a.mutable_bytes() + static_cast<size_t>(row * kN + col) * sizeof(T) +
                        component * sizeof(Component),
                    &bad, sizeof(bad));
      }
      const auto [row, col] = spots.back();
      const std::string message =
          "matrix[" + std::to_string(row) + ", " + std::to_string(col) + "] is not finite";
      const absl::Status validated = ValidateFactorize(a.view(), options, nullptr, {});
      EXPECT_EQ(validated.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(validated.message().find(message), std::string::npos) << validated;
      EXPECT_TRUE(ValidateFactorize(a.view(), options, nullptr, {}, FiniteCheck::kByBackend).ok());
      if (!backend().FactorizeChecksFinite(a.view(), options, nullptr)) continue;
      const auto refused = backend().Factorize(a.view(), options, nullptr, nullptr);
      EXPECT_EQ(refused.status(), validated);
    }
  });
}

// Only the batched LU without a right-hand side is checked by the CUDA backend; the CPU backend
// leaves every check to ValidateFactorize.
TEST_P(FactorizeBatchTest, SaysWhichFactorizationsItChecksForNonFiniteEntries) {
  const Matrix a = RandomMatrix<double>(8, 4, 47);
  const Matrix b = RandomMatrix<double>(8, 1, 48);
  const MatrixView rhs = b.view();
  const bool cuda = GetParam() == "cuda";
  EXPECT_EQ(backend().FactorizeChecksFinite(a.view(), Batch(FactorizationKind::kLu, 2), nullptr),
            cuda);
  EXPECT_FALSE(backend().FactorizeChecksFinite(a.view(), Batch(FactorizationKind::kLu, 2), &rhs));
  EXPECT_FALSE(
      backend().FactorizeChecksFinite(a.view(), Batch(FactorizationKind::kCholesky, 2), nullptr));
  EXPECT_FALSE(
      backend().FactorizeChecksFinite(a.view(), {.kind = FactorizationKind::kLu}, nullptr));
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(FactorizeBatchTest);

// ---- CPU threads ----

TEST(FactorizeBatchCpu, ThreadsGiveTheSameBitsAsOneThread) {
  const Matrix a = Stack(RandomMatrices<double>(700, 8, 8, 24));
  const Matrix b = Stack(RandomMatrices<double>(700, 8, 1, 25));
  const MatrixView rhs = b.view();
  const auto one = MakeCpuBackend({.threads = 1});
  const auto four = MakeCpuBackend({.threads = 4});
  for (const FactorizationKind kind : {FactorizationKind::kLu, FactorizationKind::kQr}) {
    const auto serial = one->Factorize(a.view(), Batch(kind, 700), &rhs, nullptr);
    const auto parallel = four->Factorize(a.view(), Batch(kind, 700), &rhs, nullptr);
    ASSERT_TRUE(serial.ok()) << serial.status();
    ASSERT_TRUE(parallel.ok()) << parallel.status();
    const auto same_bits = [](const Matrix& x, const Matrix& y) {
      return x.byte_size() == y.byte_size() &&
             std::memcmp(x.bytes(), y.bytes(), x.byte_size()) == 0;
    };
    EXPECT_TRUE(same_bits(serial->lu, parallel->lu));
    EXPECT_TRUE(same_bits(serial->q, parallel->q));
    EXPECT_TRUE(same_bits(serial->r, parallel->r));
    EXPECT_TRUE(same_bits(*serial->solution, *parallel->solution));
    EXPECT_EQ(serial->permutation, parallel->permutation);
  }
}

// ---- Validation ----

TEST(ValidateFactorizeBatch, AcceptsAWellFormedBatch) {
  const Matrix a = RandomMatrix<double>(12, 3, 26);
  const Matrix b = RandomMatrix<double>(12, 2, 27);
  const MatrixView rhs = b.view();
  EXPECT_TRUE(ValidateFactorize(a.view(), Batch(FactorizationKind::kLu, 4), &rhs, {}).ok());
  EXPECT_TRUE(ValidateFactorize(a.view(), Batch(FactorizationKind::kQr, 2), &rhs, {}).ok());
}

TEST(ValidateFactorizeBatch, RejectsNegativeBatchCount) {
  const Matrix a = RandomMatrix<double>(4, 4, 28);
  const absl::Status s =
      ValidateFactorize(a.view(), Batch(FactorizationKind::kLu, -1), nullptr, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("batch_count is -1"), std::string::npos) << s;
}

TEST(ValidateFactorizeBatch, NamesRowsAndBatchCountWhenRowsDoNotDivide) {
  const Matrix a = RandomMatrix<double>(10, 2, 29);
  const absl::Status s = ValidateFactorize(a.view(), Batch(FactorizationKind::kQr, 4), nullptr, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("matrix.rows = 10 is not a multiple of batch_count = 4"),
            std::string::npos)
      << s;
}

TEST(ValidateFactorizeBatch, RejectsRhsRowsThatDoNotDivide) {
  const Matrix a = RandomMatrix<double>(12, 3, 30);
  const Matrix b = RandomMatrix<double>(10, 1, 31);
  const MatrixView rhs = b.view();
  const absl::Status s = ValidateFactorize(a.view(), Batch(FactorizationKind::kLu, 4), &rhs, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("rhs.rows = 10 is not a multiple of batch_count = 4"),
            std::string::npos)
      << s;
}

// Results go straight into memory the caller names (FactorizeOptions::destinations, e.g. a
// shared-memory range): the same bytes as without, for every kind, batched and not; a destination
// of the wrong size is not used.
TEST_P(FactorizeBatchTest, ResultsLandInTheCallersDestinationsBitForBit) {
  using T = double;
  constexpr int64_t kCount = 40;
  constexpr int64_t kN = 12;
  const Matrix spd = Stack(std::vector<Matrix>(kCount, HermitianPositiveDefinite<T>(kN, 5)));
  const Matrix random = Stack(RandomMatrices<T>(kCount, kN, kN, 6));
  const Matrix b = Stack(RandomMatrices<T>(kCount, kN, 3, 7));
  const MatrixView rhs = b.view();
  for (const FactorizationKind kind :
       {FactorizationKind::kLu, FactorizationKind::kCholesky, FactorizationKind::kQr}) {
    for (const int64_t count : {int64_t{0}, kCount}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(kind)) + " batch " + std::to_string(count));
      const Matrix& a = kind == FactorizationKind::kCholesky ? spd : random;
      // One matrix: the first kN rows (and right-hand side rows) of the stacks.
      const Matrix one_a = Slice(a, 0, kN);
      const MatrixView a_view = count > 0 ? a.view() : one_a.view();
      const Matrix one_b = Slice(b, 0, kN);
      const MatrixView b_view = count > 0 ? rhs : one_b.view();
      const FactorizeOptions plain =
          count > 0 ? Batch(kind, count) : FactorizeOptions{.kind = kind};
      const auto want = backend().Factorize(a_view, plain, &b_view, nullptr);
      ASSERT_TRUE(want.ok()) << want.status();

      std::vector<std::pair<const char*, const Matrix*>> results = {{"solution", &*want->solution}};
      if (kind == FactorizationKind::kLu) results.push_back({"lu", &want->lu});
      if (kind == FactorizationKind::kCholesky) results.push_back({"l", &want->l});
      if (kind == FactorizationKind::kQr) {
        results.push_back({"q", &want->q});
        results.push_back({"r", &want->r});
      }
      std::vector<std::vector<std::byte>> memory;
      FactorizeOptions options = plain;
      for (const auto& [name, matrix] : results) {
        memory.emplace_back(matrix->byte_size(), std::byte{0x7f});
        options.destinations.Add(name, memory.back());
      }
      std::vector<std::byte> too_small(16);
      options.destinations.Add("solution", too_small);  // a second, unusable entry is ignored
      const auto got = backend().Factorize(a_view, options, &b_view, nullptr);
      ASSERT_TRUE(got.ok()) << got.status();
      for (size_t i = 0; i < results.size(); ++i) {
        const auto& [name, matrix] = results[i];
        SCOPED_TRACE(name);
        const Matrix& placed = std::string(name) == "solution" ? *got->solution
                               : std::string(name) == "lu"     ? got->lu
                               : std::string(name) == "l"      ? got->l
                               : std::string(name) == "q"      ? got->q
                                                               : got->r;
        EXPECT_TRUE(placed.borrowed());
        EXPECT_EQ(placed.bytes(), memory[i].data());
        EXPECT_EQ(std::memcmp(memory[i].data(), matrix->bytes(), matrix->byte_size()), 0);
      }
      EXPECT_EQ(got->permutation, want->permutation);
    }
  }
}

TEST(ValidateFactorizeBatch, AppliesShapeRulesToEachMatrix) {
  const Matrix a = RandomMatrix<double>(12, 3, 32);  // six 2x3 matrices
  for (const FactorizationKind kind : {FactorizationKind::kLu, FactorizationKind::kCholesky}) {
    const absl::Status s = ValidateFactorize(a.view(), Batch(kind, 6), nullptr, {});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("each matrix of the batch must be square, got 2x3"),
              std::string::npos)
        << s;
  }
  const Matrix b = RandomMatrix<double>(12, 1, 33);
  const MatrixView rhs = b.view();
  const absl::Status s = ValidateFactorize(a.view(), Batch(FactorizationKind::kQr, 6), &rhs, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("rows >= cols"), std::string::npos) << s;
}

}  // namespace
}  // namespace matrixd
