// Batched Factorize requests (FactorizeRequest.batch_count) end to end through matrixd::Client:
// stacked factors and solutions checked matrix by matrix, per-matrix singular columns, a failing
// member named by its index, and malformed batches rejected naming the field.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::Each;
using ::testing::HasSubstr;

constexpr int64_t kCount = 50;
constexpr int64_t kN = 4;

// kCount random kN x kN matrices (or kN x cols), stacked row-major as a batch expects them.
std::vector<double> RandomStack(int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> values(static_cast<size_t>(kCount * kN * cols));
  for (double& x : values) x = uniform(rng);
  return values;
}

v1::FactorizeRequest BatchRequest(const std::vector<double>& a, int64_t rows,
                                  v1::FactorizationKind kind, int64_t batch_count) {
  v1::FactorizeRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(rows, kN, a);
  request.set_kind(kind);
  request.set_batch_count(batch_count);
  return request;
}

// max |(P A - L U)[i, j]| of matrix `index`, with L U unpacked from the stacked factors.
double LuResidual(const std::vector<double>& a, const std::vector<double>& lu,
                  const v1::FactorizeResponse& response, int64_t index) {
  const double* a_i = a.data() + index * kN * kN;
  const double* lu_i = lu.data() + index * kN * kN;
  double worst = 0.0;
  for (int64_t i = 0; i < kN; ++i) {
    const int64_t source = response.permutation(static_cast<int>(index * kN + i));
    for (int64_t j = 0; j < kN; ++j) {
      double product = 0.0;
      for (int64_t p = 0; p <= std::min(i, j); ++p) {
        const double l = p == i ? 1.0 : lu_i[i * kN + p];
        product += l * lu_i[p * kN + j];
      }
      worst = std::max(worst, std::abs(a_i[source * kN + j] - product));
    }
  }
  return worst;
}

class FactorizeBatchServerTest : public ServerTest {};

TEST_F(FactorizeBatchServerTest, BatchedLuSolveReturnsStackedFactorsAndSolutions) {
  const std::vector<double> a = RandomStack(kN, 1);
  const std::vector<double> b = RandomStack(1, 2);
  v1::FactorizeRequest request = BatchRequest(a, kCount * kN, v1::FACTORIZATION_KIND_LU, kCount);
  *request.mutable_rhs() = MakeMatrix<double>(kCount * kN, 1, b);
  const absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->kind(), v1::FACTORIZATION_KIND_LU);
  EXPECT_EQ(response->lu().rows(), kCount * kN);
  EXPECT_EQ(response->lu().cols(), kN);
  ASSERT_EQ(response->permutation_size(), kCount * kN);
  EXPECT_FALSE(response->singular());
  EXPECT_EQ(response->singular_column(), -1);
  ASSERT_EQ(response->singular_columns_size(), kCount);
  EXPECT_THAT(response->singular_columns(), Each(-1));
  const absl::StatusOr<std::vector<double>> lu = ReadMatrix<double>(response->lu());
  const absl::StatusOr<std::vector<double>> x = ReadMatrix<double>(response->solution());
  ASSERT_TRUE(lu.ok()) << lu.status();
  ASSERT_TRUE(x.ok()) << x.status();
  ASSERT_EQ(x->size(), static_cast<size_t>(kCount * kN));
  for (int64_t index = 0; index < kCount; ++index) {
    SCOPED_TRACE("matrix " + std::to_string(index));
    EXPECT_LE(LuResidual(a, *lu, *response, index), 1e-14);
    for (int64_t i = 0; i < kN; ++i) {
      double ax = 0.0;
      for (int64_t j = 0; j < kN; ++j) ax += a[(index * kN + i) * kN + j] * (*x)[index * kN + j];
      // Random 4x4 matrices are well conditioned: the residual stays near rounding.
      EXPECT_NEAR(ax, b[index * kN + i], 1e-11);
    }
  }
}

TEST_F(FactorizeBatchServerTest, BatchedLuReportsTheSingularColumnOfEachMatrix) {
  std::vector<double> a = RandomStack(kN, 3);
  for (int64_t i = 0; i < kN; ++i) a[(7 * kN + i) * kN + 2] = 0.0;   // matrix 7, column 2
  for (int64_t i = 0; i < kN; ++i) a[(30 * kN + i) * kN + 0] = 0.0;  // matrix 30, column 0
  const absl::StatusOr<v1::FactorizeResponse> response =
      client().Factorize(BatchRequest(a, kCount * kN, v1::FACTORIZATION_KIND_LU, kCount));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->singular());
  EXPECT_EQ(response->singular_column(), 2);  // that of matrix 7, the first singular one
  std::vector<int64_t> want(kCount, -1);
  want[7] = 2;
  want[30] = 0;
  EXPECT_EQ(std::vector<int64_t>(response->singular_columns().begin(),
                                 response->singular_columns().end()),
            want);
}

TEST_F(FactorizeBatchServerTest, BatchedCholeskyNamesTheMatrixThatIsNotPositiveDefinite) {
  std::vector<double> a(static_cast<size_t>(kCount * kN * kN), 0.0);
  for (int64_t index = 0; index < kCount; ++index) {
    for (int64_t i = 0; i < kN; ++i) a[(index * kN + i) * kN + i] = index == 17 ? -1.0 : 2.0;
  }
  const absl::StatusOr<v1::FactorizeResponse> response =
      client().Factorize(BatchRequest(a, kCount * kN, v1::FACTORIZATION_KIND_CHOLESKY, kCount));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(response.status().message()),
              HasSubstr("matrix 17 of the batch is not positive definite"));
  ExpectStillServing();
}

TEST_F(FactorizeBatchServerTest, BatchCountThatDoesNotDivideTheRowsIsInvalid) {
  const absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(
      BatchRequest(RandomStack(kN, 4), kCount * kN, v1::FACTORIZATION_KIND_QR, 3));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(response.status().message()),
              HasSubstr("matrix.rows = 200 is not a multiple of batch_count = 3"));
  ExpectStillServing();
}

TEST_F(FactorizeBatchServerTest, NegativeBatchCountIsInvalid) {
  const absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(
      BatchRequest(RandomStack(kN, 5), kCount * kN, v1::FACTORIZATION_KIND_LU, -2));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(response.status().message()), HasSubstr("batch_count is -2"));
  ExpectStillServing();
}

}  // namespace
}  // namespace matrixd::server::testing
