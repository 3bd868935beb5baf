// MakeMatrix / ReadMatrix: the wire layout of Matrix.data and its checks.
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using ::testing::HasSubstr;

TEST(MakeMatrix, Float64IsLittleEndianRowMajor) {
  const v1::Matrix m = MakeMatrix<double>(1, 2, std::vector<double>{1.0, -2.0});
  EXPECT_EQ(m.rows(), 1);
  EXPECT_EQ(m.cols(), 2);
  EXPECT_EQ(m.dtype(), v1::DTYPE_FLOAT64);
  // IEEE 754: 1.0 = 0x3FF0000000000000, -2.0 = 0xC000000000000000, least significant byte first.
  EXPECT_EQ(m.data(), std::string("\0\0\0\0\0\0\xf0\x3f\0\0\0\0\0\0\0\xc0", 16));
}

TEST(MakeMatrix, Complex64InterleavesRealAndImaginary) {
  const v1::Matrix m =
      MakeMatrix<std::complex<float>>(1, 1, std::vector<std::complex<float>>{{1.0f, -2.0f}});
  EXPECT_EQ(m.dtype(), v1::DTYPE_COMPLEX64);
  // 1.0f = 0x3F800000, -2.0f = 0xC0000000.
  EXPECT_EQ(m.data(), std::string("\0\0\x80\x3f\0\0\0\xc0", 8));
}

TEST(MakeMatrix, Uint32AndInt64Layouts) {
  EXPECT_EQ(MakeMatrix<uint32_t>(1, 1, std::vector<uint32_t>{0x01020304u}).data(),
            std::string("\x04\x03\x02\x01", 4));
  EXPECT_EQ(MakeMatrix<int64_t>(1, 1, std::vector<int64_t>{-2}).data(),
            std::string("\xfe\xff\xff\xff\xff\xff\xff\xff", 8));
}

template <typename T>
void ExpectRoundTrip(const std::vector<T>& values, int64_t rows, int64_t cols, v1::DType dtype) {
  const v1::Matrix m = MakeMatrix<T>(rows, cols, values);
  EXPECT_EQ(m.dtype(), dtype);
  EXPECT_EQ(m.data().size(), values.size() * sizeof(T));
  absl::StatusOr<std::vector<T>> back = ReadMatrix<T>(m);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), values.size());
  // Compare bytes, so NaN and -0 count as round-tripping only when bit-identical.
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(back->data()), back->size() * sizeof(T)),
            m.data());
}

TEST(MatrixRoundTrip, Float32) {
  ExpectRoundTrip<float>({1.5f, -0.0f, std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::denorm_min()},
                         2, 2, v1::DTYPE_FLOAT32);
}

TEST(MatrixRoundTrip, Float64) {
  ExpectRoundTrip<double>(
      {std::numeric_limits<double>::max(), -std::numeric_limits<double>::infinity(), 1e-310}, 3, 1,
      v1::DTYPE_FLOAT64);
}

TEST(MatrixRoundTrip, Complex64) {
  ExpectRoundTrip<std::complex<float>>({{1, 2}, {-3, 4}}, 1, 2, v1::DTYPE_COMPLEX64);
}

TEST(MatrixRoundTrip, Complex128) {
  ExpectRoundTrip<std::complex<double>>({{1e300, -1e-300}}, 1, 1, v1::DTYPE_COMPLEX128);
}

TEST(MatrixRoundTrip, Int64) {
  ExpectRoundTrip<int64_t>(
      {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}, 2, 1, v1::DTYPE_INT64);
}

TEST(MatrixRoundTrip, Uint32) {
  ExpectRoundTrip<uint32_t>({0u, 0xffffffffu, 7u}, 1, 3, v1::DTYPE_UINT32);
}

TEST(MatrixRoundTrip, EmptyMatrix) { ExpectRoundTrip<double>({}, 0, 0, v1::DTYPE_FLOAT64); }

TEST(ReadMatrix, DtypeMismatchIsInvalidArgument) {
  const v1::Matrix m = MakeMatrix<float>(1, 2, std::vector<float>{1, 2});
  // A float32 1x2 has as many bytes as a float64 1x1, but the dtype must still match.
  absl::StatusOr<std::vector<double>> read = ReadMatrix<double>(m);
  ASSERT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr("FLOAT32"));
  EXPECT_THAT(read.status().message(), HasSubstr("FLOAT64"));
}

TEST(ReadMatrix, ShortDataIsInvalidArgument) {
  v1::Matrix m = MakeMatrix<double>(3, 3, std::vector<double>(9, 1.0));
  m.mutable_data()->resize(70);
  absl::StatusOr<std::vector<double>> read = ReadMatrix<double>(m);
  ASSERT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr("70 bytes, want 3*3*8 = 72"));
}

TEST(ReadMatrix, NegativeShapeIsInvalidArgument) {
  v1::Matrix m = MakeMatrix<double>(1, 1, std::vector<double>{1});
  m.set_rows(-1);
  EXPECT_EQ(ReadMatrix<double>(m).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReadMatrix, OverflowingShapeIsInvalidArgument) {
  v1::Matrix m;
  m.set_dtype(v1::DTYPE_FLOAT64);
  m.set_rows(int64_t{1} << 32);
  m.set_cols(int64_t{1} << 32);
  EXPECT_EQ(ReadMatrix<double>(m).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace matrixd
