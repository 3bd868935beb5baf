// The soak test's checks (tests/soak/checked_requests.h) on hand-worked answers: each accepts the
// right result and calls a slightly wrong one wrong, so a soak run's "wrong 0" means something.
#include "tests/soak/checked_requests.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd::soak {
namespace {

using ::testing::HasSubstr;

v1::JobRequest DeterminantOf(v1::Matrix matrix) {
  v1::JobRequest request;
  *request.mutable_determinant()->mutable_matrix() = std::move(matrix);
  return request;
}

v1::JobUpdate ExactDeterminant(const std::string& exact) {
  v1::JobUpdate update;
  update.mutable_determinant()->set_exact(exact);
  return update;
}

v1::JobUpdate FloatDeterminant(double sign, double log_abs) {
  v1::JobUpdate update;
  update.mutable_determinant()->set_sign(sign);
  update.mutable_determinant()->set_log_abs(log_abs);
  return update;
}

TEST(CheckJobResult, ExactDeterminantMustMatchEveryResidue) {
  const v1::JobRequest request =
      DeterminantOf(MakeMatrix<int64_t>(2, 2, std::vector<int64_t>{2, 1, 1, 3}));
  EXPECT_TRUE(CheckJobResult(request, ExactDeterminant("5")).ok());
  EXPECT_EQ(CheckJobResult(request, ExactDeterminant("6")).code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(CheckJobResult(request, ExactDeterminant("-5")).ok());
  EXPECT_FALSE(CheckJobResult(request, ExactDeterminant("")).ok());
  EXPECT_FALSE(CheckJobResult(request, ExactDeterminant("5x")).ok());
}

TEST(CheckJobResult, FloatDeterminantNeedsSignAndLogWithinBound) {
  const v1::JobRequest request =
      DeterminantOf(MakeMatrix<double>(2, 2, std::vector<double>{1, 3, 2, 1}));  // det -5
  EXPECT_TRUE(CheckJobResult(request, FloatDeterminant(-1, std::log(5.0))).ok());
  EXPECT_FALSE(CheckJobResult(request, FloatDeterminant(1, std::log(5.0))).ok());
  const absl::Status off = CheckJobResult(request, FloatDeterminant(-1, std::log(5.0) + 1e-7));
  EXPECT_THAT(off.message(), HasSubstr("log|det|"));
}

TEST(CheckJobResult, LuNeedsItsFactorsAndSolution) {
  // A = [1 2; 3 4]: rows swapped, L = [1 0; 1/3 1], U = [3 4; 0 2/3]; A x = [5; 6] at x =
  // [-4; 4.5].
  v1::JobRequest request;
  v1::FactorizeRequest& factorize = *request.mutable_factorize();
  factorize.set_kind(v1::FACTORIZATION_KIND_LU);
  *factorize.mutable_matrix() = MakeMatrix<double>(2, 2, std::vector<double>{1, 2, 3, 4});
  *factorize.mutable_rhs() = MakeMatrix<double>(2, 1, std::vector<double>{5, 6});
  v1::JobUpdate right;
  v1::FactorizeResponse& response = *right.mutable_factorize();
  *response.mutable_lu() = MakeMatrix<double>(2, 2, std::vector<double>{3, 4, 1.0 / 3, 2.0 / 3});
  response.add_permutation(1);
  response.add_permutation(0);
  *response.mutable_solution() = MakeMatrix<double>(2, 1, std::vector<double>{-4, 4.5});
  EXPECT_TRUE(CheckJobResult(request, right).ok());

  v1::JobUpdate wrong_permutation = right;
  wrong_permutation.mutable_factorize()->set_permutation(0, 0);
  wrong_permutation.mutable_factorize()->set_permutation(1, 1);
  EXPECT_THAT(CheckJobResult(request, wrong_permutation).message(), HasSubstr("reproduces"));

  v1::JobUpdate wrong_solution = right;
  *wrong_solution.mutable_factorize()->mutable_solution() =
      MakeMatrix<double>(2, 1, std::vector<double>{-4, 4.5 + 1e-9});
  EXPECT_THAT(CheckJobResult(request, wrong_solution).message(), HasSubstr("residual"));

  v1::JobUpdate no_factors = right;
  no_factors.mutable_factorize()->clear_lu();
  EXPECT_FALSE(CheckJobResult(request, no_factors).ok());
}

TEST(CheckJobResult, Uint32ProductWrapsAroundExactly) {
  v1::JobRequest request;
  *request.mutable_multiply()->mutable_a() =
      MakeMatrix<uint32_t>(1, 2, std::vector<uint32_t>{1u << 31, 3});
  *request.mutable_multiply()->mutable_b() =
      MakeMatrix<uint32_t>(2, 1, std::vector<uint32_t>{2, 5});
  v1::JobUpdate update;
  *update.mutable_multiply()->mutable_c() = MakeMatrix<uint32_t>(1, 1, std::vector<uint32_t>{15});
  EXPECT_TRUE(CheckJobResult(request, update).ok());
  *update.mutable_multiply()->mutable_c() = MakeMatrix<uint32_t>(1, 1, std::vector<uint32_t>{16});
  EXPECT_FALSE(CheckJobResult(request, update).ok());
}

TEST(CheckJobResult, FloatProductHonoursTransposes) {
  // op(A) = [1 2] (A = [1; 2] transposed), B = [3; 4]: C = [11].
  v1::JobRequest request;
  v1::MultiplyRequest& multiply = *request.mutable_multiply();
  multiply.set_transpose_a(true);
  *multiply.mutable_a() = MakeMatrix<double>(2, 1, std::vector<double>{1, 2});
  *multiply.mutable_b() = MakeMatrix<double>(2, 1, std::vector<double>{3, 4});
  v1::JobUpdate update;
  *update.mutable_multiply()->mutable_c() = MakeMatrix<double>(1, 1, std::vector<double>{11});
  EXPECT_TRUE(CheckJobResult(request, update).ok());
  *update.mutable_multiply()->mutable_c() = MakeMatrix<double>(1, 1, std::vector<double>{11.001});
  EXPECT_FALSE(CheckJobResult(request, update).ok());
  *update.mutable_multiply()->mutable_c() = MakeMatrix<double>(1, 2, std::vector<double>{11, 0});
  EXPECT_THAT(CheckJobResult(request, update).message(), HasSubstr("is 1x2"));
}

TEST(CheckJobResult, ExactPermanentBeyondInt64) {
  // per of the 12 x 12 matrix of nines: 12! 9^12, above 2^63.
  v1::JobRequest request;
  *request.mutable_permanent()->mutable_matrix() =
      MakeMatrix<int64_t>(12, 12, std::vector<int64_t>(144, 9));
  v1::JobUpdate update;
  update.mutable_permanent()->set_exact("135284199861657369600");
  EXPECT_TRUE(CheckJobResult(request, update).ok());
  update.mutable_permanent()->set_exact("135284199861657369601");
  EXPECT_FALSE(CheckJobResult(request, update).ok());
}

TEST(CheckJobResult, FloatPermanentWithinItsBound) {
  v1::JobRequest request;
  *request.mutable_permanent()->mutable_matrix() =
      MakeMatrix<double>(2, 2, std::vector<double>{1, -2, 3, 4});  // per = 4 - 6 = -2
  v1::JobUpdate update;
  update.mutable_permanent()->set_value(-2);
  EXPECT_TRUE(CheckJobResult(request, update).ok());
  update.mutable_permanent()->set_value(-2 + 1e-9);
  EXPECT_FALSE(CheckJobResult(request, update).ok());
}

TEST(CheckJobResult, AResultOfAnotherKindIsWrong) {
  const v1::JobRequest request = DeterminantOf(MakeMatrix<double>(1, 1, std::vector<double>{2}));
  v1::JobUpdate update;
  update.mutable_permanent()->set_value(2);
  EXPECT_FALSE(CheckJobResult(request, update).ok());
  EXPECT_FALSE(CheckJobResult(request, v1::JobUpdate()).ok());
}

TEST(MakeCheckedRequest, SameSeedSameRequestsWithinTheSizes) {
  const SoakSizes sizes = {.max_n = 5, .max_permanent_n = 3};
  std::mt19937_64 first(7);
  std::mt19937_64 second(7);
  for (int i = 0; i < 40; ++i) {
    const SoakOp op = kSoakOps[i % 4];
    const v1::JobRequest a = MakeCheckedRequest(op, sizes, first);
    const v1::JobRequest b = MakeCheckedRequest(op, sizes, second);
    EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
    const int64_t rows = op == SoakOp::kPermanent     ? a.permanent().matrix().rows()
                         : op == SoakOp::kDeterminant ? a.determinant().matrix().rows()
                         : op == SoakOp::kMultiply    ? a.multiply().a().rows()
                                                      : a.factorize().matrix().rows();
    EXPECT_GE(rows, 1);
    EXPECT_LE(rows, op == SoakOp::kPermanent ? 3 : 5);
  }
}

}  // namespace
}  // namespace matrixd::soak
