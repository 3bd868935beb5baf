// ValidateRequest (server/request_validation.h): enum fields mapped to core options or refused by
// name, operands resolved, and core/validation.h's checks applied under the server's Limits; each
// refusal before anything is computed.
#include "server/request_validation.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd::server {
namespace {

using ::testing::HasSubstr;

const Limits kLimits{.max_elements = 64, .max_permanent_n = 5};

v1::Matrix Identity(int64_t n) {
  std::vector<double> values(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) values[i * n + i] = 1.0;
  return MakeMatrix<double>(n, n, values);
}

template <typename T>
void ExpectInvalid(const absl::StatusOr<T>& result, const std::string& message) {
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr(message));
}

// ---- Determinant ----

TEST(ValidateDeterminant, MapsMethodAndModulus) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<int64_t>(2, 2, {1, 2, 3, 4});
  request.set_method(v1::DETERMINANT_METHOD_CONDENSATION);
  request.set_modulus(7);
  absl::StatusOr<DeterminantInputs> inputs = ValidateRequest(request, kLimits);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_EQ(inputs->options.method, DeterminantMethod::kCondensation);
  EXPECT_EQ(inputs->options.modulus, 7u);
  EXPECT_EQ(inputs->matrix.view().rows, 2);
  EXPECT_EQ(inputs->matrix.view().dtype, DType::kInt64);
}

TEST(ValidateDeterminant, PassesDownWhatItFoundOfAHostMatrix) {
  // Rows (3, 4) and (0, 5): Hadamard's bound 5 * 5, computed here once for the backend.
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<int64_t>(2, 2, {3, 4, 0, 5});
  absl::StatusOr<DeterminantInputs> inputs = ValidateRequest(request, kLimits);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_TRUE(inputs->options.host_entries_checked);
  ASSERT_TRUE(inputs->options.hadamard_bound_bits.has_value());
  EXPECT_NEAR(*inputs->options.hadamard_bound_bits, std::log2(25.0), 1e-12);

  // Modulo a prime, and for floating point, no exact determinant follows: no bound.
  request.set_modulus(7);
  inputs = ValidateRequest(request, kLimits);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_FALSE(inputs->options.hadamard_bound_bits.has_value());
  *request.mutable_matrix() = Identity(2);
  request.set_modulus(0);
  inputs = ValidateRequest(request, kLimits);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_TRUE(inputs->options.host_entries_checked);
  EXPECT_FALSE(inputs->options.hadamard_bound_bits.has_value());
}

TEST(ValidateDeterminant, UnknownMethodIsRefusedByName) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = Identity(2);
  request.set_method(static_cast<v1::DeterminantMethod>(42));
  ExpectInvalid(ValidateRequest(request, kLimits), "method is 42");
}

TEST(ValidateDeterminant, NonFiniteEntryIsNamedByIndex) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() =
      MakeMatrix<double>(2, 2, {1.0, 0.0, std::numeric_limits<double>::infinity(), 1.0});
  ExpectInvalid(ValidateRequest(request, kLimits), "matrix[1, 0] is not finite");
}

TEST(ValidateDeterminant, CompositeModulusIsRefused) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<int64_t>(1, 1, {3});
  request.set_modulus(9);
  ExpectInvalid(ValidateRequest(request, kLimits), "modulus 9 must be 0 or a prime");
}

TEST(ValidateDeterminant, MatrixAboveTheElementLimitIsRefused) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = Identity(9);  // 81 > 64 elements
  ExpectInvalid(ValidateRequest(request, kLimits), "the limit is 64");
}

TEST(ValidateDeterminant, ReferenceWithoutRegistryIsAFailedPrecondition) {
  v1::DeterminantRequest request;
  request.mutable_matrix_ref()->set_handle("m-1");
  EXPECT_EQ(ValidateRequest(request, kLimits).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// ---- Factorize ----

TEST(ValidateFactorize, UnspecifiedKindIsRefused) {
  v1::FactorizeRequest request;
  *request.mutable_matrix() = Identity(2);
  ExpectInvalid(ValidateRequest(request, kLimits), "kind is unspecified");
}

TEST(ValidateFactorize, AbsentRightHandSideMeansNoSolve) {
  v1::FactorizeRequest request;
  *request.mutable_matrix() = Identity(3);
  request.set_kind(v1::FACTORIZATION_KIND_QR);
  request.mutable_rhs();  // present but empty: proto3's absent matrix
  absl::StatusOr<FactorizeInputs> inputs = ValidateRequest(request, kLimits);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_EQ(inputs->kind, FactorizationKind::kQr);
  EXPECT_EQ(inputs->rhs_view(), nullptr);
}

TEST(ValidateFactorize, RightHandSideAndBatchAreCarried) {
  v1::FactorizeRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(4, 2, {2, 0, 0, 2, 3, 0, 0, 3});
  *request.mutable_rhs() = MakeMatrix<double>(4, 1, {1, 1, 1, 1});
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  request.set_batch_count(2);
  absl::StatusOr<FactorizeInputs> inputs = ValidateRequest(request, kLimits);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  ASSERT_NE(inputs->rhs_view(), nullptr);
  EXPECT_EQ(inputs->rhs_view()->rows, 4);
  EXPECT_EQ(inputs->options().batch_count, 2);
  EXPECT_EQ(inputs->options().kind, FactorizationKind::kLu);
}

TEST(ValidateFactorize, KeepInputWithoutKeepResultIsRefused) {
  v1::FactorizeRequest request;
  *request.mutable_matrix() = Identity(2);
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  request.set_keep_input(true);
  ExpectInvalid(ValidateRequest(request, kLimits), "keep_input is set without");
}

TEST(ValidateFactorize, KeepInputForAKeptBatchIsAccepted) {
  v1::FactorizeRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(4, 2, {2, 0, 0, 2, 3, 0, 0, 3});
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  request.set_batch_count(2);
  request.set_keep_input(true);
  request.mutable_result_options()->set_keep_result(true);
  absl::StatusOr<FactorizeInputs> inputs = ValidateRequest(request, kLimits);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_EQ(inputs->options().batch_count, 2);
}

TEST(ValidateFactorize, NonSymmetricCholeskyIsRefused) {
  v1::FactorizeRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, {2, 1, 0, 2});
  request.set_kind(v1::FACTORIZATION_KIND_CHOLESKY);
  EXPECT_EQ(ValidateRequest(request, kLimits).status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- Solve ----

TEST(ValidateSolve, WithoutAHandleIsRefused) {
  v1::SolveRequest request;
  *request.mutable_rhs() = MakeMatrix<double>(2, 1, {1, 1});
  ExpectInvalid(ValidateRequest(request, kLimits), "factorization names no factorization");
}

TEST(ValidateSolve, WithoutARegistryIsAFailedPrecondition) {
  v1::SolveRequest request;
  request.mutable_factorization()->set_handle("f-1");
  *request.mutable_rhs() = MakeMatrix<double>(2, 1, {1, 1});
  EXPECT_EQ(ValidateRequest(request, kLimits).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ValidateSolve, UnknownTransposeIsRefusedByName) {
  v1::SolveRequest request;
  request.set_transpose(static_cast<v1::SolveTranspose>(9));
  ExpectInvalid(ValidateRequest(request, kLimits), "transpose is 9");
}

// ---- Multiply ----

TEST(ValidateMultiply, CarriesEveryOption) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<float>(3, 2, {1, 2, 3, 4, 5, 6});
  *request.mutable_b() = MakeMatrix<float>(2, 3, {1, 2, 3, 4, 5, 6});
  request.set_transpose_a(true);
  request.set_transpose_b(true);
  request.set_block_size(2);
  request.set_allow_tf32(true);
  absl::StatusOr<MultiplyInputs> inputs = ValidateRequest(request, kLimits);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_TRUE(inputs->options.transpose_a);
  EXPECT_TRUE(inputs->options.transpose_b);
  EXPECT_EQ(inputs->options.block_size, 2);
  EXPECT_TRUE(inputs->options.allow_tf32);
}

TEST(ValidateMultiply, DisagreeingDTypesAreRefusedNamingB) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(1, 1, {1});
  *request.mutable_b() = MakeMatrix<float>(1, 1, {1});
  ExpectInvalid(ValidateRequest(request, kLimits), "b.dtype is float32");
}

TEST(ValidateMultiply, ProductAboveTheElementLimitIsRefused) {
  v1::MultiplyRequest request;  // 9 x 1 times 1 x 9: small operands, an 81-element product
  *request.mutable_a() = MakeMatrix<double>(9, 1, std::vector<double>(9, 1.0));
  *request.mutable_b() = MakeMatrix<double>(1, 9, std::vector<double>(9, 1.0));
  ExpectInvalid(ValidateRequest(request, kLimits), "the product would have 9x9 elements");
}

TEST(ValidateMultiply, MissingOperandIsRefusedNamingIt) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(1, 1, {1});
  EXPECT_EQ(ValidateRequest(request, kLimits).status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- Permanent ----

TEST(ValidatePermanent, MapsTheMethod) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = Identity(3);
  request.set_method(v1::PERMANENT_METHOD_RYSER);
  absl::StatusOr<PermanentInputs> inputs = ValidateRequest(request, kLimits);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_EQ(inputs->options.method, PermanentMethod::kRyser);
}

TEST(ValidatePermanent, OrderAboveTheFlagIsRefusedNamingIt) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = Identity(6);
  ExpectInvalid(ValidateRequest(request, kLimits), "--max_permanent_n");
}

TEST(ValidatePermanent, OrderAtTheFlagIsAccepted) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = Identity(5);
  EXPECT_TRUE(ValidateRequest(request, kLimits).ok());
}

TEST(ValidatePermanent, UnknownMethodIsRefusedByName) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = Identity(2);
  request.set_method(static_cast<v1::PermanentMethod>(7));
  ExpectInvalid(ValidateRequest(request, kLimits), "method is 7");
}

TEST(ValidatePermanent, MapsThePrecisionAndTheWalk) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = Identity(3);
  absl::StatusOr<PermanentInputs> defaults = ValidateRequest(request, kLimits);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->options.precision, PermanentPrecision::kExtended);
  EXPECT_EQ(defaults->options.walk, PermanentWalk::kAuto);
  request.set_precision(v1::PERMANENT_PRECISION_FAST);
  request.set_walk(v1::PERMANENT_WALK_SPARSE);
  absl::StatusOr<PermanentInputs> inputs = ValidateRequest(request, kLimits);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_EQ(inputs->options.precision, PermanentPrecision::kFast);
  EXPECT_EQ(inputs->options.walk, PermanentWalk::kSparse);
}

TEST(ValidatePermanent, ExactPrecisionIsOnlyReported) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = Identity(2);
  request.set_precision(v1::PERMANENT_PRECISION_EXACT);
  ExpectInvalid(ValidateRequest(request, kLimits), "precision is PERMANENT_PRECISION_EXACT");
}

TEST(ValidatePermanent, UnknownPrecisionAndWalkAreRefusedByName) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = Identity(2);
  request.set_precision(static_cast<v1::PermanentPrecision>(9));
  ExpectInvalid(ValidateRequest(request, kLimits), "precision is 9");
  request.set_precision(v1::PERMANENT_PRECISION_DEFAULT);
  request.set_walk(static_cast<v1::PermanentWalk>(8));
  ExpectInvalid(ValidateRequest(request, kLimits), "walk is 8");
}

}  // namespace
}  // namespace matrixd::server
