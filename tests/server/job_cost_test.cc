// EstimatedFlops (server/job_cost.h), the cost the scheduler sorts jobs into lanes by, against the
// operation counts written out by hand for small shapes.
#include "server/job_cost.h"

#include <complex>
#include <cstdint>
#include <utility>
#include <vector>

#include "client/client.h"
#include "gtest/gtest.h"
#include "server/request_validation.h"

namespace matrixd::server {
namespace {

// Validated inputs of each request, with generous limits.
const Limits kLimits{.max_elements = 1 << 20, .max_permanent_n = 30};

template <typename Request>
auto Inputs(const Request& request) {
  auto inputs = ValidateRequest(request, kLimits);
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  return *std::move(inputs);
}

template <typename T>
v1::Matrix Filled(int64_t rows, int64_t cols, T value) {
  return MakeMatrix<T>(rows, cols, std::vector<T>(static_cast<size_t>(rows * cols), value));
}

// A diagonal matrix of `value`: non-singular, symmetric positive definite for value > 0.
template <typename T>
v1::Matrix Diagonal(int64_t n, T value) {
  std::vector<T> values(static_cast<size_t>(n * n), T{0});
  for (int64_t i = 0; i < n; ++i) values[i * n + i] = value;
  return MakeMatrix<T>(n, n, values);
}

v1::DeterminantRequest Determinant(v1::Matrix matrix, uint64_t modulus = 0) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = std::move(matrix);
  request.set_modulus(modulus);
  return request;
}

v1::FactorizeRequest Factorize(v1::Matrix matrix, v1::FactorizationKind kind) {
  v1::FactorizeRequest request;
  *request.mutable_matrix() = std::move(matrix);
  request.set_kind(kind);
  return request;
}

v1::PermanentRequest Permanent(v1::Matrix matrix, v1::PermanentMethod method) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = std::move(matrix);
  request.set_method(method);
  return request;
}

TEST(JobCost, DeterminantIsNCubed) {
  EXPECT_EQ(EstimatedFlops(Inputs(Determinant(Diagonal<double>(10, 2.0)))), 1000.0);
}

TEST(JobCost, ComplexCountsFourTimes) {
  EXPECT_EQ(EstimatedFlops(Inputs(Determinant(Diagonal<std::complex<double>>(10, 2.0)))), 4000.0);
}

TEST(JobCost, OneByOneDeterminantIsOne) {
  EXPECT_EQ(EstimatedFlops(Inputs(Determinant(Diagonal<double>(1, 3.0)))), 1.0);
}

// Hadamard's bound of the 4 x 4 identity is 1: one 62-bit prime.
TEST(JobCost, ExactDeterminantOfSmallEntriesTakesOnePrime) {
  EXPECT_EQ(EstimatedFlops(Inputs(Determinant(Diagonal<int64_t>(4, 1)))), 64.0);
}

// Entries of 2^40 at n = 4: |det| <= (2 * 2^40)^4 = 2^164, with the sign 165 bits: three primes.
TEST(JobCost, ExactDeterminantOfLargeEntriesTakesMorePrimes) {
  EXPECT_EQ(EstimatedFlops(Inputs(Determinant(Filled<int64_t>(4, 4, int64_t{1} << 40)))), 3 * 64.0);
}

TEST(JobCost, ModularDeterminantTakesNoExtraPrimes) {
  EXPECT_EQ(EstimatedFlops(Inputs(Determinant(Filled<int64_t>(4, 4, int64_t{1} << 40), 7))), 64.0);
}

TEST(JobCost, LuIsMNMinMN) {
  EXPECT_EQ(EstimatedFlops(Inputs(Factorize(Filled<double>(6, 4, 1.0), v1::FACTORIZATION_KIND_LU))),
            6.0 * 4 * 4);
}

TEST(JobCost, QrIsTwiceLu) {
  EXPECT_EQ(EstimatedFlops(Inputs(Factorize(Filled<double>(6, 4, 1.0), v1::FACTORIZATION_KIND_QR))),
            2 * 6.0 * 4 * 4);
}

TEST(JobCost, CholeskyIsNCubedOverThree) {
  EXPECT_EQ(
      EstimatedFlops(Inputs(Factorize(Diagonal<double>(6, 2.0), v1::FACTORIZATION_KIND_CHOLESKY))),
      6.0 * 6 * 6 / 3);
}

TEST(JobCost, SolveAddsTwoMNPerRightHandSide) {
  v1::FactorizeRequest request = Factorize(Diagonal<double>(4, 2.0), v1::FACTORIZATION_KIND_LU);
  *request.mutable_rhs() = Filled<double>(4, 3, 1.0);
  EXPECT_EQ(EstimatedFlops(Inputs(request)), 4.0 * 4 * 4 + 2 * 4.0 * 4 * 3);
}

TEST(JobCost, BatchIsTheSumOverItsMatrices) {
  v1::FactorizeRequest request =
      Factorize(Filled<double>(3 * 2, 2, 1.0), v1::FACTORIZATION_KIND_LU);
  request.set_batch_count(3);
  EXPECT_EQ(EstimatedFlops(Inputs(request)), 3 * (2.0 * 2 * 2));
}

TEST(JobCost, ProductIsTwoMKNOfTheTransposedShapes) {
  v1::MultiplyRequest request;
  *request.mutable_a() = Filled<double>(3, 5, 1.0);  // op(A) = A^T: 5 x 3
  *request.mutable_b() = Filled<double>(7, 3, 1.0);  // op(B) = B^T: 3 x 7
  request.set_transpose_a(true);
  request.set_transpose_b(true);
  EXPECT_EQ(EstimatedFlops(Inputs(request)), 2.0 * 5 * 3 * 7);
}

TEST(JobCost, ComplexProductCountsFourTimes) {
  v1::MultiplyRequest request;
  *request.mutable_a() = Filled<std::complex<float>>(2, 3, {1.0f, 1.0f});
  *request.mutable_b() = Filled<std::complex<float>>(3, 4, {1.0f, 0.0f});
  EXPECT_EQ(EstimatedFlops(Inputs(request)), 4 * 2.0 * 2 * 3 * 4);
}

// The 10 x 10 all-ones float64 permanent by `method`.
double TenByTenPermanent(v1::PermanentMethod method) {
  return EstimatedFlops(Inputs(Permanent(Filled<double>(10, 10, 1.0), method)));
}

TEST(JobCost, GlynnWalksTwoToTheNMinusOneSteps) {
  EXPECT_EQ(TenByTenPermanent(v1::PERMANENT_METHOD_GLYNN), 2.0 * 10 * 512);
}

TEST(JobCost, AutoPermanentIsCountedAsGlynn) {
  EXPECT_EQ(TenByTenPermanent(v1::PERMANENT_METHOD_AUTO), 2.0 * 10 * 512);
}

TEST(JobCost, RyserWalksTwoToTheNSteps) {
  EXPECT_EQ(TenByTenPermanent(v1::PERMANENT_METHOD_RYSER), 2.0 * 10 * 1024);
}

// All ones at n = 10: |per| <= (10 * 1)^10 < 2^34, one prime; entries of 2^50: (10 * 2^50)^10 is
// about 2^533, with the sign 535 bits: nine primes.
TEST(JobCost, ExactPermanentTakesThePrimesOfItsBound) {
  EXPECT_EQ(
      EstimatedFlops(Inputs(Permanent(Filled<int64_t>(10, 10, 1), v1::PERMANENT_METHOD_GLYNN))),
      2.0 * 10 * 512);
  EXPECT_EQ(EstimatedFlops(Inputs(
                Permanent(Filled<int64_t>(10, 10, int64_t{1} << 50), v1::PERMANENT_METHOD_GLYNN))),
            9 * 2.0 * 10 * 512);
}

TEST(JobCost, ComplexPermanentCountsFourTimes) {
  EXPECT_EQ(EstimatedFlops(Inputs(Permanent(Filled<std::complex<double>>(4, 4, {1.0, 1.0}),
                                            v1::PERMANENT_METHOD_RYSER))),
            4 * 2.0 * 4 * 16);
}

}  // namespace
}  // namespace matrixd::server
