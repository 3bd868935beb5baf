#include "client/matrix_values.h"

#include <complex>
#include <cstdint>
#include <limits>
#include <vector>

#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using ::testing::HasSubstr;

TEST(ElementSize, EveryDtype) {
  EXPECT_EQ(ElementSize(v1::DTYPE_FLOAT32), 4);
  EXPECT_EQ(ElementSize(v1::DTYPE_FLOAT64), 8);
  EXPECT_EQ(ElementSize(v1::DTYPE_COMPLEX64), 8);
  EXPECT_EQ(ElementSize(v1::DTYPE_COMPLEX128), 16);
  EXPECT_EQ(ElementSize(v1::DTYPE_INT64), 8);
  EXPECT_EQ(ElementSize(v1::DTYPE_UINT32), 4);
  EXPECT_EQ(ElementSize(v1::DTYPE_UNSPECIFIED), 0);
}

TEST(ParseDType, AcceptsFlagAndEnumNamesInAnyCase) {
  EXPECT_EQ(*ParseDType("complex64"), v1::DTYPE_COMPLEX64);
  EXPECT_EQ(*ParseDType("FLOAT32"), v1::DTYPE_FLOAT32);
  EXPECT_EQ(*ParseDType("Uint32"), v1::DTYPE_UINT32);
  for (v1::DType dtype :
       {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64, v1::DTYPE_COMPLEX64, v1::DTYPE_COMPLEX128, v1::DTYPE_INT64, v1::DTYPE_UINT32}) {
    EXPECT_EQ(*ParseDType(DTypeFlagName(dtype)), dtype);
  }
}

TEST(ParseDType, RejectsUnknownNamesListingTheChoices) {
  absl::StatusOr<v1::DType> dtype = ParseDType("float16");
  ASSERT_EQ(dtype.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dtype.status().message(), HasSubstr("complex128"));
}

TEST(CheckMatrixShape, RejectsUnspecifiedDtypeAndWrongLength) {
  v1::Matrix m = MakeMatrix<double>(2, 2, std::vector<double>(4, 0.0));
  EXPECT_TRUE(CheckMatrixShape(m).ok());
  m.mutable_data()->pop_back();
  EXPECT_THAT(CheckMatrixShape(m).message(), HasSubstr("31 bytes, want 2*2*8 = 32"));
  m.set_dtype(v1::DTYPE_UNSPECIFIED);
  EXPECT_EQ(CheckMatrixShape(m).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConvertMatrix, Int64ToFloat64IsExactForSmallValues) {
  const v1::Matrix m = MakeMatrix<int64_t>(1, 3, std::vector<int64_t>{-5, 0, 1 << 30});
  absl::StatusOr<v1::Matrix> converted = ConvertMatrix(m, v1::DTYPE_FLOAT64);
  ASSERT_TRUE(converted.ok()) << converted.status();
  EXPECT_EQ(*ReadMatrix<double>(*converted), (std::vector<double>{-5, 0, 1 << 30}));
}

TEST(ConvertMatrix, SameDtypeKeepsInt64BeyondDoublePrecision) {
  const int64_t big = (int64_t{1} << 62) + 1;
  const v1::Matrix m = MakeMatrix<int64_t>(1, 1, std::vector<int64_t>{big});
  EXPECT_EQ(*ReadMatrix<int64_t>(*ConvertMatrix(m, v1::DTYPE_INT64)), (std::vector<int64_t>{big}));
}

TEST(ConvertMatrix, RealToComplexHasZeroImaginaryPart) {
  const v1::Matrix m = MakeMatrix<float>(1, 2, std::vector<float>{1.5f, -2});
  EXPECT_EQ(*ReadMatrix<std::complex<double>>(*ConvertMatrix(m, v1::DTYPE_COMPLEX128)),
            (std::vector<std::complex<double>>{{1.5, 0}, {-2, 0}}));
}

TEST(ConvertMatrix, IntegralFloatsBecomeIntegers) {
  const v1::Matrix m = MakeMatrix<double>(1, 2, std::vector<double>{4294967295.0, 0});
  EXPECT_EQ(*ReadMatrix<uint32_t>(*ConvertMatrix(m, v1::DTYPE_UINT32)),
            (std::vector<uint32_t>{4294967295u, 0}));
}

void ExpectConversionError(const v1::Matrix& m, v1::DType dtype, absl::string_view why) {
  absl::StatusOr<v1::Matrix> converted = ConvertMatrix(m, dtype);
  ASSERT_EQ(converted.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(converted.status().message(), HasSubstr(why));
}

TEST(ConvertMatrix, RejectsAFractionForInt64NamingTheElement) {
  ExpectConversionError(MakeMatrix<double>(2, 2, std::vector<double>{1, 2, 3, 2.5}), v1::DTYPE_INT64,
                        "element (1, 1) = 2.5 cannot be int64: not an integer");
}

TEST(ConvertMatrix, RejectsNegativeAndTooLargeForUint32) {
  ExpectConversionError(MakeMatrix<int64_t>(1, 1, std::vector<int64_t>{-1}), v1::DTYPE_UINT32,
                        "out of range");
  ExpectConversionError(MakeMatrix<double>(1, 1, std::vector<double>{4294967296.0}), v1::DTYPE_UINT32,
                        "out of range");
}

TEST(ConvertMatrix, RejectsTwoToTheSixtyThreeForInt64) {
  ExpectConversionError(MakeMatrix<double>(1, 1, std::vector<double>{9223372036854775808.0}),
                        v1::DTYPE_INT64, "out of range");
}

TEST(ConvertMatrix, RejectsNanForIntegers) {
  ExpectConversionError(
      MakeMatrix<double>(1, 1, std::vector<double>{std::numeric_limits<double>::quiet_NaN()}),
      v1::DTYPE_INT64, "cannot be int64");
}

TEST(ConvertMatrix, RejectsAnImaginaryPartForRealDtypes) {
  ExpectConversionError(
      MakeMatrix<std::complex<double>>(1, 1, std::vector<std::complex<double>>{{1, 1e-300}}),
      v1::DTYPE_FLOAT64, "imaginary part");
}

TEST(ConvertMatrix, RejectsFloat32OverflowButKeepsInfinity) {
  ExpectConversionError(MakeMatrix<double>(1, 1, std::vector<double>{1e39}), v1::DTYPE_FLOAT32,
                        "out of float32 range");
  const v1::Matrix inf =
      MakeMatrix<double>(1, 1, std::vector<double>{std::numeric_limits<double>::infinity()});
  EXPECT_TRUE(ConvertMatrix(inf, v1::DTYPE_FLOAT32).ok());
}

}  // namespace
}  // namespace matrixd
