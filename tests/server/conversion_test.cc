// server/matrix_conversion and server/status_conversion without a server.
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/matrix_conversion.h"
#include "server/status_conversion.h"

namespace matrixd::server {
namespace {

using ::testing::HasSubstr;

v1::Matrix ProtoOf(int64_t rows, int64_t cols, v1::DType dtype, size_t bytes) {
  v1::Matrix proto;
  proto.set_rows(rows);
  proto.set_cols(cols);
  proto.set_dtype(dtype);
  proto.mutable_data()->resize(bytes);
  return proto;
}

TEST(MatrixFromProto, ViewHasShapeDTypeAndTheSameBytes) {
  // Small (inline) and large (heap) strings take different storage paths.
  for (int64_t n : {1, 2, 50}) {
    v1::Matrix proto = ProtoOf(n, n + 1, v1::DTYPE_COMPLEX64, static_cast<size_t>(n * (n + 1) * 8));
    for (size_t i = 0; i < proto.data().size(); ++i) (*proto.mutable_data())[i] = char(i * 7 + 1);
    absl::StatusOr<InputMatrix> input = FromProto(proto, "a");
    ASSERT_TRUE(input.ok()) << input.status();
    const MatrixView& view = input->view();
    EXPECT_EQ(view.rows, n);
    EXPECT_EQ(view.cols, n + 1);
    EXPECT_EQ(view.dtype, DType::kComplex64);
    ASSERT_EQ(view.byte_size(), proto.data().size());
    EXPECT_EQ(std::memcmp(view.data, proto.data().data(), view.byte_size()), 0);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(view.data) % alignof(float), 0u);
  }
}

TEST(MatrixFromProto, EveryDTypeMapsToItsCoreDType) {
  const std::vector<std::pair<v1::DType, DType>> pairs = {
      {v1::DTYPE_FLOAT32, DType::kFloat32},     {v1::DTYPE_FLOAT64, DType::kFloat64},
      {v1::DTYPE_COMPLEX64, DType::kComplex64}, {v1::DTYPE_COMPLEX128, DType::kComplex128},
      {v1::DTYPE_INT64, DType::kInt64},         {v1::DTYPE_UINT32, DType::kUInt32}};
  for (const auto& [proto_dtype, dtype] : pairs) {
    absl::StatusOr<InputMatrix> input =
        FromProto(ProtoOf(2, 3, proto_dtype, 6 * ElementSize(dtype)), "m");
    ASSERT_TRUE(input.ok()) << input.status();
    EXPECT_EQ(input->view().dtype, dtype);
    EXPECT_EQ(ToProto(dtype), proto_dtype);
  }
}

TEST(MatrixFromProto, DataLengthMismatchNamesFieldAndSizes) {
  absl::StatusOr<InputMatrix> input = FromProto(ProtoOf(3, 3, v1::DTYPE_FLOAT64, 70), "rhs");
  EXPECT_EQ(input.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(input.status().message(), "rhs.data has 70 bytes, want 3*3*8 = 72");
}

TEST(MatrixFromProto, OverflowingShapeIsRejectedWithoutAllocating) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  absl::StatusOr<InputMatrix> input = FromProto(ProtoOf(big, big, v1::DTYPE_UINT32, 4), "b");
  EXPECT_EQ(input.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(input.status().message()), HasSubstr("b has shape"));
  EXPECT_THAT(std::string(input.status().message()), HasSubstr("overflows"));
}

TEST(MatrixFromProto, NonPositiveShapesAreRejected) {
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 0}, {-1, -1}}) {
    absl::StatusOr<InputMatrix> input =
        FromProto(ProtoOf(rows, cols, v1::DTYPE_FLOAT32, 0), "matrix");
    EXPECT_EQ(input.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(input.status().message()), HasSubstr("matrix has shape"));
  }
}

TEST(MatrixFromProto, UnknownAndUnspecifiedDTypesAreRejected) {
  EXPECT_THAT(
      std::string(FromProto(ProtoOf(1, 1, static_cast<v1::DType>(7), 8), "a").status().message()),
      HasSubstr("a.dtype is 7"));
  EXPECT_THAT(
      std::string(FromProto(ProtoOf(1, 1, v1::DTYPE_UNSPECIFIED, 8), "a").status().message()),
      HasSubstr("a.dtype is unspecified"));
}

TEST(MatrixFromProto, EmptyMessageCountsAsAbsent) {
  EXPECT_TRUE(IsAbsent(v1::Matrix()));
  EXPECT_FALSE(IsAbsent(ProtoOf(1, 1, v1::DTYPE_FLOAT64, 8)));
  EXPECT_FALSE(IsAbsent(ProtoOf(0, 1, v1::DTYPE_FLOAT64, 0)));
}

TEST(MatrixToProto, RoundTripsShapeDTypeAndBytes) {
  const std::vector<double> values = {1.5, -2.0, 3.25, 1e300, -1e-300, 0.0};
  const Matrix m = Matrix::FromValues<double>(2, 3, values);
  v1::Matrix proto;
  ToProto(m, &proto);
  EXPECT_EQ(proto.rows(), 2);
  EXPECT_EQ(proto.cols(), 3);
  EXPECT_EQ(proto.dtype(), v1::DTYPE_FLOAT64);
  ASSERT_EQ(proto.data().size(), values.size() * sizeof(double));
  EXPECT_EQ(std::memcmp(proto.data().data(), values.data(), proto.data().size()), 0);
}

ScaledNumber PowerOf(std::complex<double> base, int times) {
  ScaledNumber x;
  for (int i = 0; i < times; ++i) x *= base;
  return x;
}

TEST(DeterminantToProto, HugeRealValueKeepsDecimalFormAndSaturatesValue) {
  DeterminantResult result;
  result.value = PowerOf(-1e100, 5);  // -1e500
  result.method_used = DeterminantMethod::kLu;
  result.stats = {.backend = "cpu", .device = "d", .seconds = 0.5, .bytes_moved = 7, .flops = 9};
  v1::DeterminantResponse response;
  ToProto(result, DType::kFloat64, 0, &response);
  EXPECT_EQ(response.sign(), -1.0);
  EXPECT_EQ(response.phase_re(), -1.0);
  EXPECT_EQ(response.phase_im(), 0.0);
  EXPECT_NEAR(response.mantissa(), -1.0, 1e-12);
  EXPECT_EQ(response.exponent10(), 500);
  EXPECT_NEAR(response.log_abs(), 500 * std::log(10.0), 1e-9);
  EXPECT_EQ(response.value(), -std::numeric_limits<double>::infinity());
  EXPECT_FALSE(response.singular());
  EXPECT_EQ(response.method_used(), v1::DETERMINANT_METHOD_LU);
  EXPECT_EQ(response.stats().backend(), "cpu");
  EXPECT_EQ(response.stats().device(), "d");
  EXPECT_EQ(response.stats().seconds(), 0.5);
  EXPECT_EQ(response.stats().bytes_moved(), 7u);
  EXPECT_EQ(response.stats().flops(), 9.0);
  EXPECT_FALSE(response.has_accuracy());
}

TEST(DeterminantToProto, AccuracyIsCopied) {
  DeterminantResult result;
  result.accuracy = Accuracy{.rcond = 1e-10,
                             .relative_error_bound = 2e-5,
                             .meaningful_digits = 4.7,
                             .ill_conditioned = true};
  v1::DeterminantResponse response;
  ToProto(result, DType::kFloat64, 0, &response);
  ASSERT_TRUE(response.has_accuracy());
  EXPECT_EQ(response.accuracy().rcond(), 1e-10);
  EXPECT_EQ(response.accuracy().relative_error_bound(), 2e-5);
  EXPECT_EQ(response.accuracy().meaningful_digits(), 4.7);
  EXPECT_TRUE(response.accuracy().ill_conditioned());
}

TEST(DeterminantToProto, TinyComplexValueUnderflowsValueButNotMantissa) {
  DeterminantResult result;
  result.value = PowerOf({0.0, 1e-100}, 5);  // i^5 1e-500 = i * 1e-500
  v1::DeterminantResponse response;
  ToProto(result, DType::kComplex128, 0, &response);
  EXPECT_EQ(response.sign(), 1.0);
  EXPECT_NEAR(response.phase_re(), 0.0, 1e-15);
  EXPECT_NEAR(response.phase_im(), 1.0, 1e-15);
  EXPECT_NEAR(response.mantissa(), 0.0, 1e-12);
  EXPECT_NEAR(response.mantissa_imag(), 1.0, 1e-12);
  EXPECT_EQ(response.exponent10(), -500);
  EXPECT_EQ(response.value(), 0.0);
  EXPECT_EQ(response.value_imag(), 0.0);
}

TEST(DeterminantToProto, ZeroIsSingularWithMinusInfiniteLog) {
  DeterminantResult result;
  result.value = ScaledNumber::Zero();
  v1::DeterminantResponse response;
  ToProto(result, DType::kFloat32, 0, &response);
  EXPECT_TRUE(response.singular());
  EXPECT_EQ(response.sign(), 0.0);
  EXPECT_EQ(response.phase_re(), 0.0);
  EXPECT_EQ(response.mantissa(), 0.0);
  EXPECT_EQ(response.log_abs(), -std::numeric_limits<double>::infinity());
}

TEST(DeterminantToProto, ExactZeroIsSingularEvenIfFloatingValueIsNot) {
  DeterminantResult result;
  result.value = ScaledNumber::Of(1e-30);  // rounding noise of an inexact path
  result.exact = "0";
  v1::DeterminantResponse response;
  ToProto(result, DType::kInt64, 0, &response);
  EXPECT_TRUE(response.singular());
  EXPECT_EQ(response.exact(), "0");
  EXPECT_EQ(response.value(), 0.0);
}

TEST(DeterminantToProto, ModularResultSetsResidueAndSingular) {
  DeterminantResult result;
  result.residue = 0;
  v1::DeterminantResponse response;
  ToProto(result, DType::kInt64, 13, &response);
  EXPECT_TRUE(response.singular());
  result.residue = 12;
  response.Clear();
  ToProto(result, DType::kInt64, 13, &response);
  EXPECT_FALSE(response.singular());
  EXPECT_EQ(response.residue(), 12u);
}

TEST(FactorizeToProto, NonSingularLuHasSingularColumnMinusOne) {
  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  result.lu = Matrix::FromValues<double>(1, 1, {2.0});
  result.permutation = {0};
  v1::FactorizeResponse response;
  ToProto(result, &response);
  EXPECT_FALSE(response.singular());
  EXPECT_EQ(response.singular_column(), -1);
  EXPECT_EQ(response.lu().rows(), 1);
  EXPECT_FALSE(response.has_l());
  EXPECT_FALSE(response.has_solution());
}

TEST(StatusToGrpc, EveryCanonicalCodeKeepsCodeAndMessage) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status status(static_cast<absl::StatusCode>(code), "why: matrix.rows");
    const grpc::Status grpc_status = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(grpc_status.error_code()), code);
    EXPECT_EQ(grpc_status.error_message(), "why: matrix.rows");
  }
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(StatusToGrpc, NonCanonicalCodeBecomesUnknown) {
  const absl::Status status(static_cast<absl::StatusCode>(99), "odd");
  EXPECT_EQ(ToGrpcStatus(status).error_code(), grpc::StatusCode::UNKNOWN);
}

}  // namespace
}  // namespace matrixd::server
