// Every kind of bad request, end to end: the right gRPC code, a message that names the field, and
// a server that still answers health checks and computes afterwards.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

class BadRequestTest : public ServerTest {
 protected:
  template <typename Response>
  static void ExpectRejected(const absl::StatusOr<Response>& response, absl::StatusCode code,
                             const std::string& names) {
    ASSERT_FALSE(response.ok()) << "the request was accepted";
    EXPECT_EQ(response.status().code(), code) << response.status();
    EXPECT_THAT(std::string(response.status().message()), HasSubstr(names));
    ExpectStillServing();
  }
  template <typename Response>
  static void ExpectInvalid(const absl::StatusOr<Response>& response, const std::string& names) {
    ExpectRejected(response, absl::StatusCode::kInvalidArgument, names);
  }

  static v1::DeterminantRequest Determinant(const v1::Matrix& matrix, uint64_t modulus = 0) {
    v1::DeterminantRequest request;
    *request.mutable_matrix() = matrix;
    request.set_modulus(modulus);
    return request;
  }
  static v1::FactorizeRequest Factorize(const v1::Matrix& matrix, v1::FactorizationKind kind) {
    v1::FactorizeRequest request;
    *request.mutable_matrix() = matrix;
    request.set_kind(kind);
    return request;
  }
  static v1::Matrix Identity3() { return MakeMatrix<double>(3, 3, {1, 0, 0, 0, 1, 0, 0, 0, 1}); }
  static v1::Matrix Int3() { return MakeMatrix<int64_t>(3, 3, {1, 2, 3, 4, 5, 6, 7, 8, 10}); }
};

TEST_F(BadRequestTest, WrongDataLengthNamesBothSizes) {
  v1::Matrix matrix = Identity3();
  matrix.mutable_data()->resize(70);
  ExpectInvalid(client().Determinant(Determinant(matrix)),
                "matrix.data has 70 bytes, want 3*3*8 = 72");
}

TEST_F(BadRequestTest, WrongRhsDataLengthNamesRhs) {
  v1::FactorizeRequest request = Factorize(Identity3(), v1::FACTORIZATION_KIND_LU);
  *request.mutable_rhs() = MakeMatrix<double>(3, 1, {1, 2, 3});
  request.mutable_rhs()->mutable_data()->resize(23);
  ExpectInvalid(client().Factorize(request), "rhs.data has 23 bytes, want 3*1*8 = 24");
}

TEST_F(BadRequestTest, ZeroRows) {
  v1::Matrix matrix = MakeMatrix<double>(0, 3, std::vector<double>{});
  ExpectInvalid(client().Determinant(Determinant(matrix)), "matrix has shape 0x3");
}

TEST_F(BadRequestTest, ZeroCols) {
  v1::MultiplyRequest request;
  *request.mutable_a() = Identity3();
  *request.mutable_b() = MakeMatrix<double>(3, 0, std::vector<double>{});
  ExpectInvalid(client().Multiply(request), "b has shape 3x0");
}

TEST_F(BadRequestTest, NegativeRows) {
  v1::Matrix matrix = Identity3();
  matrix.set_rows(-3);
  ExpectInvalid(client().Determinant(Determinant(matrix)), "matrix has shape -3x3");
}

TEST_F(BadRequestTest, ShapeWhoseByteSizeOverflowsIsRejectedBeforeAnyWork) {
  v1::Matrix matrix = MakeMatrix<double>(1, 1, {1.0});
  matrix.set_rows(int64_t{1} << 40);
  matrix.set_cols(int64_t{1} << 40);
  ExpectInvalid(client().Determinant(Determinant(matrix)),
                "matrix has shape 1099511627776x1099511627776");
}

TEST_F(BadRequestTest, ShapeWhoseByteSizeJustOverflowsIsRejected) {
  // rows*cols fits in int64 but rows*cols*16 does not.
  v1::Matrix matrix =
      MakeMatrix<std::complex<double>>(1, 1, std::vector<std::complex<double>>{{1.0, 0.0}});
  matrix.set_rows(int64_t{1} << 31);
  matrix.set_cols(int64_t{1} << 29);
  ExpectInvalid(client().Determinant(Determinant(matrix)), "overflows");
}

TEST_F(BadRequestTest, MatrixAboveElementLimit) {
  // 300 x 300 > TestLimits().max_elements = 65536.
  v1::Matrix matrix = MakeMatrix<float>(300, 300, std::vector<float>(300 * 300, 1.0f));
  ExpectInvalid(client().Determinant(Determinant(matrix)), "the limit is 65536");
}

TEST_F(BadRequestTest, ProductAboveElementLimit) {
  // Each operand is within the limit; the 65536 x 65536 product is not.
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<float>(65536, 1, std::vector<float>(65536, 1.0f));
  *request.mutable_b() = MakeMatrix<float>(1, 65536, std::vector<float>(65536, 1.0f));
  ExpectInvalid(client().Multiply(request), "the product would have 65536x65536 elements");
}

TEST_F(BadRequestTest, NonSquareDeterminant) {
  ExpectInvalid(client().Determinant(Determinant(MakeMatrix<double>(2, 3, {1, 2, 3, 4, 5, 6}))),
                "matrix must be square, got 2x3");
}

TEST_F(BadRequestTest, NonSquarePermanent) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(3, 2, {1, 2, 3, 4, 5, 6});
  ExpectInvalid(client().Permanent(request), "matrix must be square, got 3x2");
}

TEST_F(BadRequestTest, NonSquareCholesky) {
  ExpectInvalid(client().Factorize(Factorize(MakeMatrix<double>(2, 3, {1, 2, 3, 4, 5, 6}),
                                             v1::FACTORIZATION_KIND_CHOLESKY)),
                "matrix must be square, got 2x3");
}

TEST_F(BadRequestTest, NonSymmetricCholeskyNamesThePair) {
  // Positive definite as a lower triangle, but not symmetric: potrf would factor another matrix.
  ExpectInvalid(client().Factorize(Factorize(MakeMatrix<double>(2, 2, {4, 1, 2, 3}),
                                             v1::FACTORIZATION_KIND_CHOLESKY)),
                "matrix is not symmetric: [0][1] = 1 but [1][0] = 2");
}

TEST_F(BadRequestTest, NonSquareLuSolve) {
  v1::FactorizeRequest request =
      Factorize(MakeMatrix<double>(2, 3, {1, 2, 3, 4, 5, 6}), v1::FACTORIZATION_KIND_LU);
  *request.mutable_rhs() = MakeMatrix<double>(2, 1, {1, 2});
  ExpectInvalid(client().Factorize(request), "matrix must be square");
}

TEST_F(BadRequestTest, MismatchedMultiplyShapes) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(2, 3, {1, 2, 3, 4, 5, 6});
  *request.mutable_b() = MakeMatrix<double>(2, 3, {1, 2, 3, 4, 5, 6});
  ExpectInvalid(client().Multiply(request), "op(a) is 2x3 and op(b) is 2x3");
}

TEST_F(BadRequestTest, MultiGpuProductOnTheCpuBackendIsUnimplementedAndNamesDevices) {
  v1::MultiplyRequest request;
  *request.mutable_a() = Identity3();
  *request.mutable_b() = Identity3();
  request.set_devices(2);
  ExpectRejected(client().Multiply(request), absl::StatusCode::kUnimplemented,
                 "devices = 2 (or a multi-GPU method): one product over several GPUs needs the "
                 "CUDA backend built with NCCL; this is the cpu backend");
  request.set_devices(0);
  request.set_method(v1::MULTIPLY_METHOD_CUBLASMP);
  ExpectRejected(client().Multiply(request), absl::StatusCode::kUnimplemented, "cpu backend");
}

TEST_F(BadRequestTest, PermanentOverSeveralDevicesOnTheCpuBackendNamesDevices) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = Identity3();
  request.set_devices(2);
  ExpectInvalid(client().Permanent(request),
                "devices is 2; the cpu backend splits a permanent over up to 1 device(s)");
  request.set_devices(-3);
  ExpectInvalid(client().Permanent(request), "devices is -3");
}

TEST_F(BadRequestTest, FactorizeOverSeveralDevicesIsRefusedNamingTheField) {
  v1::FactorizeRequest request = Factorize(Identity3(), v1::FACTORIZATION_KIND_LU);
  request.set_devices(-1);
  ExpectInvalid(client().Factorize(request), "devices is -1");
  // What the multi-GPU path does not take is refused by validation, on every backend.
  request.set_devices(2);
  request.set_estimate_condition(true);
  ExpectInvalid(client().Factorize(request), "estimate_condition is set with devices = 2");
  request.set_estimate_condition(false);
  request.set_kind(v1::FACTORIZATION_KIND_QR);
  ExpectInvalid(client().Factorize(request), "kind is QR with devices = 2");
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  *request.mutable_matrix() = MakeMatrix<double>(6, 3, std::vector<double>(18, 1.0));
  request.set_batch_count(2);
  ExpectInvalid(client().Factorize(request), "batch_count is 2 with devices = 2");
  // A request the path takes meets the CPU backend, which has no GPUs.
  request = Factorize(Identity3(), v1::FACTORIZATION_KIND_CHOLESKY);
  request.set_devices(2);
  ExpectInvalid(client().Factorize(request),
                "devices is 2: one factorization over several GPUs needs the CUDA backend built "
                "with NCCL; this is the cpu backend");
  // So does a float32 one: every dtype the single-device path takes passes validation.
  request = Factorize(Identity3(), v1::FACTORIZATION_KIND_LU);
  *request.mutable_matrix() = MakeMatrix<float>(3, 3, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  request.set_devices(2);
  ExpectInvalid(client().Factorize(request), "devices is 2: one factorization over several GPUs");
  request.set_devices(1);
  absl::StatusOr<v1::FactorizeResponse> factors = client().Factorize(request);
  ASSERT_TRUE(factors.ok()) << factors.status();
}

TEST_F(BadRequestTest, DeterminantOverSeveralDevicesIsRefusedNamingDevices) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = Identity3();
  request.set_devices(-2);
  ExpectInvalid(client().Determinant(request), "devices is -2");
  request.set_devices(2);
  ExpectRejected(client().Determinant(request), absl::StatusCode::kUnimplemented,
                 "devices = 2: one determinant over several GPUs needs the CUDA backend built "
                 "with NCCL; this is the cpu backend");
  request.set_devices(1);
  absl::StatusOr<v1::DeterminantResponse> det = client().Determinant(request);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_DOUBLE_EQ(det->value(), 1.0);
}

TEST_F(BadRequestTest, NegativeDevicesAndUnknownMultiplyMethod) {
  v1::MultiplyRequest request;
  *request.mutable_a() = Identity3();
  *request.mutable_b() = Identity3();
  request.set_devices(-1);
  ExpectInvalid(client().Multiply(request), "devices is -1");
  request.set_devices(1);
  request.set_method(static_cast<v1::MultiplyMethod>(7));
  ExpectInvalid(client().Multiply(request), "method is 7, not a known MultiplyMethod");
  // devices = 1 with the default method is the ordinary product.
  request.set_method(v1::MULTIPLY_METHOD_AUTO);
  absl::StatusOr<v1::MultiplyResponse> product = client().Multiply(request);
  ASSERT_TRUE(product.ok()) << product.status();
  EXPECT_EQ(product->c().rows(), 3);
}

TEST_F(BadRequestTest, MismatchedMultiplyDTypes) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<double>(1, 1, {1});
  *request.mutable_b() = MakeMatrix<float>(1, 1, {1});
  ExpectInvalid(client().Multiply(request), "b.dtype is float32; want a.dtype float64");
}

TEST_F(BadRequestTest, MismatchedRhsDType) {
  v1::FactorizeRequest request = Factorize(Identity3(), v1::FACTORIZATION_KIND_LU);
  *request.mutable_rhs() = MakeMatrix<float>(3, 1, {1, 2, 3});
  ExpectInvalid(client().Factorize(request), "rhs.dtype is float32");
}

TEST_F(BadRequestTest, Int64MultiplyIsNotSupported) {
  v1::MultiplyRequest request;
  *request.mutable_a() = MakeMatrix<int64_t>(1, 1, {1});
  *request.mutable_b() = MakeMatrix<int64_t>(1, 1, {1});
  ExpectInvalid(client().Multiply(request), "a.dtype is int64");
}

TEST_F(BadRequestTest, Int64FactorizeIsNotSupported) {
  ExpectInvalid(client().Factorize(Factorize(Int3(), v1::FACTORIZATION_KIND_LU)),
                "matrix.dtype is int64");
}

TEST_F(BadRequestTest, NaNEntryNamesItsPosition) {
  v1::Matrix matrix = MakeMatrix<double>(2, 3, {1, 2, 3, 4, 5, std::nan("")});
  v1::FactorizeRequest request = Factorize(matrix, v1::FACTORIZATION_KIND_QR);
  ExpectInvalid(client().Factorize(request), "matrix[1, 2] is not finite");
}

TEST_F(BadRequestTest, InfEntryNamesItsPosition) {
  v1::Matrix matrix = MakeMatrix<float>(2, 2, {1, std::numeric_limits<float>::infinity(), 3, 4});
  ExpectInvalid(client().Determinant(Determinant(matrix)), "matrix[0, 1] is not finite");
}

TEST_F(BadRequestTest, NaNImaginaryPartInMultiplyOperand) {
  v1::MultiplyRequest request;
  *request.mutable_a() =
      MakeMatrix<std::complex<float>>(1, 1, std::vector<std::complex<float>>{{1, 0}});
  *request.mutable_b() =
      MakeMatrix<std::complex<float>>(1, 1, std::vector<std::complex<float>>{{1, std::nanf("")}});
  ExpectInvalid(client().Multiply(request), "b[0, 0] is not finite");
}

TEST_F(BadRequestTest, InfEntryInPermanent) {
  v1::PermanentRequest request;
  *request.mutable_matrix() =
      MakeMatrix<double>(2, 2, {1, 2, -std::numeric_limits<double>::infinity(), 4});
  ExpectInvalid(client().Permanent(request), "matrix[1, 0] is not finite");
}

TEST_F(BadRequestTest, UnknownDTypeValue) {
  v1::Matrix matrix = Identity3();
  matrix.set_dtype(static_cast<v1::DType>(42));
  ExpectInvalid(client().Determinant(Determinant(matrix)), "matrix.dtype is 42");
}

TEST_F(BadRequestTest, UnspecifiedDType) {
  v1::Matrix matrix = Identity3();
  matrix.set_dtype(v1::DTYPE_UNSPECIFIED);
  ExpectInvalid(client().Determinant(Determinant(matrix)), "matrix.dtype is unspecified");
}

TEST_F(BadRequestTest, UnknownDeterminantMethodValue) {
  v1::DeterminantRequest request = Determinant(Identity3());
  request.set_method(static_cast<v1::DeterminantMethod>(9));
  ExpectInvalid(client().Determinant(request), "method is 9");
}

TEST_F(BadRequestTest, UnknownPermanentMethodValue) {
  v1::PermanentRequest request;
  *request.mutable_matrix() = Identity3();
  request.set_method(static_cast<v1::PermanentMethod>(-1));
  ExpectInvalid(client().Permanent(request), "method is -1");
}

TEST_F(BadRequestTest, UnknownFactorizationKindValue) {
  ExpectInvalid(client().Factorize(Factorize(Identity3(), static_cast<v1::FactorizationKind>(9))),
                "kind is 9");
}

TEST_F(BadRequestTest, UnspecifiedFactorizationKind) {
  ExpectInvalid(client().Factorize(Factorize(Identity3(), v1::FACTORIZATION_KIND_UNSPECIFIED)),
                "kind is unspecified");
}

TEST_F(BadRequestTest, ModulusOne) {
  ExpectInvalid(client().Determinant(Determinant(Int3(), 1)), "modulus 1 ");
}

TEST_F(BadRequestTest, ModulusNotPrime) {
  ExpectInvalid(client().Determinant(Determinant(Int3(), 4)), "modulus 4 ");
}

TEST_F(BadRequestTest, ModulusLargeCompositeNotPrime) {
  // 1000000007 * 1000000009: passes a weak primality test only by luck.
  ExpectInvalid(client().Determinant(Determinant(Int3(), 1000000016000000063)),
                "modulus 1000000016000000063 ");
}

TEST_F(BadRequestTest, ModulusAtTwoTo62) {
  ExpectInvalid(client().Determinant(Determinant(Int3(), uint64_t{1} << 62)),
                "modulus 4611686018427387904 ");
}

TEST_F(BadRequestTest, ModulusAboveTwoTo62) {
  // 2^64 - 59 is prime, but too large for the 128-bit modular products.
  ExpectInvalid(client().Determinant(Determinant(Int3(), 18446744073709551557u)),
                "modulus 18446744073709551557 ");
}

TEST_F(BadRequestTest, ModulusWithFloatMatrix) {
  ExpectInvalid(client().Determinant(Determinant(Identity3(), 1000000007)),
                "matrix.dtype is float64; want int64");
}

TEST_F(BadRequestTest, PermanentAboveSizeLimit) {
  // TestLimits().max_permanent_n is 12.
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(13, 13, std::vector<double>(13 * 13, 1.0));
  ExpectInvalid(client().Permanent(request), "limited to n <= 12");
}

TEST_F(BadRequestTest, RhsWithWrongRows) {
  v1::FactorizeRequest request = Factorize(Identity3(), v1::FACTORIZATION_KIND_LU);
  *request.mutable_rhs() = MakeMatrix<double>(2, 1, {1, 2});
  ExpectInvalid(client().Factorize(request), "rhs has 2 rows; want matrix.rows = 3");
}

TEST_F(BadRequestTest, RhsWithZeroColumns) {
  v1::FactorizeRequest request = Factorize(Identity3(), v1::FACTORIZATION_KIND_LU);
  *request.mutable_rhs() = MakeMatrix<double>(3, 0, std::vector<double>{});
  ExpectInvalid(client().Factorize(request), "rhs has shape 3x0");
}

TEST_F(BadRequestTest, NegativeBlockSize) {
  v1::MultiplyRequest request;
  *request.mutable_a() = Identity3();
  *request.mutable_b() = Identity3();
  request.set_block_size(-2);
  ExpectInvalid(client().Multiply(request), "block_size is -2");
}

TEST_F(BadRequestTest, CholeskyOfIndefiniteMatrixIsFailedPrecondition) {
  // Eigenvalues 3 and -1.
  ExpectRejected(client().Factorize(Factorize(MakeMatrix<double>(2, 2, {1, 2, 2, 1}),
                                              v1::FACTORIZATION_KIND_CHOLESKY)),
                 absl::StatusCode::kFailedPrecondition, "");
}

TEST_F(BadRequestTest, LuSolveWithSingularMatrixIsFailedPrecondition) {
  v1::FactorizeRequest request =
      Factorize(MakeMatrix<double>(2, 2, {1, 2, 2, 4}), v1::FACTORIZATION_KIND_LU);
  *request.mutable_rhs() = MakeMatrix<double>(2, 1, {1, 1});
  ExpectRejected(client().Factorize(request), absl::StatusCode::kFailedPrecondition, "");
}

}  // namespace
}  // namespace matrixd::server::testing
