// RequireHermitian: Cholesky's inputs must be symmetric (Hermitian) to within rounding.
#include "core/hermitian_check.h"

#include <complex>
#include <limits>
#include <string>
#include <vector>

#include "core/matrix.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using C = std::complex<double>;

void ExpectRejected(const absl::Status& s, const std::string& fragment) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s;
}

TEST(RequireHermitian, AcceptsSymmetricAndOneByOne) {
  const Matrix a = Matrix::FromValues<double>(3, 3, {4, 1, -2, 1, 5, 0.5, -2, 0.5, 6});
  EXPECT_TRUE(RequireHermitian(a.view(), 0, "matrix").ok());
  const Matrix one = Matrix::FromValues<float>(1, 1, {-3.0f});
  EXPECT_TRUE(RequireHermitian(one.view(), 0, "matrix").ok());
}

TEST(RequireHermitian, ToleratesRoundingButNotMore) {
  const double eps = std::numeric_limits<double>::epsilon();
  const Matrix close = Matrix::FromValues<double>(2, 2, {1, 0.5, 0.5 + 4 * eps, 1});
  EXPECT_TRUE(RequireHermitian(close.view(), 0, "matrix").ok());
  const Matrix far = Matrix::FromValues<double>(2, 2, {1, 0.5, 0.5 + 1e-10, 1});
  ExpectRejected(RequireHermitian(far.view(), 0, "matrix"), "matrix is not symmetric: [0][1]");
  // Float32 gets float32's epsilon: 1e-7 is within its rounding.
  const Matrix narrow = Matrix::FromValues<float>(2, 2, {1.0f, 0.5f, 0.5f + 1e-7f, 1.0f});
  EXPECT_TRUE(RequireHermitian(narrow.view(), 0, "matrix").ok());
}

TEST(RequireHermitian, ComplexNeedsTheConjugateAndARealDiagonal) {
  const Matrix hermitian = Matrix::FromValues<C>(2, 2, {C(2, 0), C(1, 1), C(1, -1), C(3, 0)});
  EXPECT_TRUE(RequireHermitian(hermitian.view(), 0, "matrix").ok());
  const Matrix symmetric = Matrix::FromValues<C>(2, 2, {C(2, 0), C(1, 1), C(1, 1), C(3, 0)});
  ExpectRejected(RequireHermitian(symmetric.view(), 0, "matrix"), "is not Hermitian: [0][1]");
  const Matrix diagonal = Matrix::FromValues<C>(2, 2, {C(2, 0), C(0, 0), C(0, 0), C(3, 1)});
  ExpectRejected(RequireHermitian(diagonal.view(), 0, "matrix"),
                 "diagonal entry [1][1] = (3, 1) is not real");
}

TEST(RequireHermitian, NamesTheMatrixOfABatch) {
  // Two stacked 2x2 matrices; the second is not symmetric.
  const Matrix batch = Matrix::FromValues<double>(4, 2, {2, 1, 1, 2, 2, 1, 0, 2});
  ExpectRejected(RequireHermitian(batch.view(), 2, "matrix"),
                 "matrix (matrix 1 of the batch) is not symmetric: [0][1] = 1 but [1][0] = 0");
}

}  // namespace
}  // namespace matrixd
