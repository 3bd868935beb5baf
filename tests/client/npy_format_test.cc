#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/matrix_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using ::testing::HasSubstr;

// A .npy file built by hand from the format spec, independent of SerializeNpy.
std::string NpyFile(int major, absl::string_view dict, absl::string_view data) {
  std::string header(dict);
  const size_t prefix = major == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const size_t length_bytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < length_bytes; ++i) {
    out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  }
  return out + header + std::string(data);
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

std::string NpyHeaderOf(absl::string_view descr, absl::string_view shape, bool fortran = false) {
  return absl::StrCat("{'descr': '", descr, "', 'fortran_order': ", fortran ? "True" : "False",
                      ", 'shape': ", shape, ", }");
}

TEST(NpyWrite, MatchesNumpyByteForByte) {
  // np.save of np.arange(6.).reshape(2, 3) with numpy >= 1.9: header length 118 (0x76), so the
  // data starts at byte 128.
  std::vector<double> values = {0, 1, 2, 3, 4, 5};
  absl::StatusOr<std::string> bytes = SerializeNpy(MakeMatrix<double>(2, 3, values));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
  std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
                         std::string(118 - dict.size() - 1, ' ') + "\n" + Bytes(values);
  EXPECT_EQ(*bytes, expected);
  EXPECT_EQ(bytes->size(), 128u + 48u);
}

template <typename T>
void ExpectRoundTrip(std::vector<T> values, int64_t rows, int64_t cols) {
  const v1::Matrix matrix = MakeMatrix<T>(rows, cols, values);
  absl::StatusOr<std::string> bytes = SerializeNpy(matrix);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(bytes->size() % 64, (values.size() * sizeof(T)) % 64) << "data is 64-byte aligned";
  absl::StatusOr<v1::Matrix> parsed = ParseNpy(*bytes, "round.npy");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->rows(), rows);
  EXPECT_EQ(parsed->cols(), cols);
  EXPECT_EQ(parsed->dtype(), matrix.dtype());
  EXPECT_EQ(parsed->data(), matrix.data());  // bit-exact, NaN payloads and -0 included
}

TEST(NpyRoundTrip, Float32KeepsExtremeValues) {
  ExpectRoundTrip<float>(
      {std::numeric_limits<float>::max(), -0.0f, std::numeric_limits<float>::denorm_min(),
       std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(), 1.5f},
      3, 2);
}

TEST(NpyRoundTrip, Float64KeepsExtremeValues) {
  ExpectRoundTrip<double>(
      {std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min(), -0.0, 1e-300},
      2, 2);
}

TEST(NpyRoundTrip, Complex64) {
  ExpectRoundTrip<std::complex<float>>({{1, -2}, {3.5f, 1e-30f}, {-0.0f, 7}}, 1, 3);
}

TEST(NpyRoundTrip, Complex128) {
  ExpectRoundTrip<std::complex<double>>({{1e300, -1e-300}, {0.1, 0.2}}, 2, 1);
}

TEST(NpyRoundTrip, Int64KeepsLimits) {
  ExpectRoundTrip<int64_t>(
      {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), -1, 0}, 2, 2);
}

TEST(NpyRoundTrip, Uint32KeepsLimits) {
  ExpectRoundTrip<uint32_t>({0u, 0xffffffffu, 12345u}, 3, 1);
}

TEST(NpyRoundTrip, OneByOne) { ExpectRoundTrip<double>({-7.25}, 1, 1); }

TEST(NpyRoundTrip, EmptyMatrix) { ExpectRoundTrip<double>({}, 0, 4); }

TEST(NpyRead, FortranOrderIsReturnedRowMajor) {
  // [[1, 2, 3], [4, 5, 6]] stored column by column.
  const std::string file =
      NpyFile(1, NpyHeaderOf("<i8", "(2, 3)", true), Bytes<int64_t>({1, 4, 2, 5, 3, 6}));
  absl::StatusOr<v1::Matrix> matrix = ParseNpy(file, "f.npy");
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  ASSERT_EQ(matrix->rows(), 2);
  ASSERT_EQ(matrix->cols(), 3);
  EXPECT_EQ(*ReadMatrix<int64_t>(*matrix), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(NpyRead, FortranOrderComplexKeepsElementsWhole) {
  const std::vector<std::complex<double>> column_major = {{1, 10}, {3, 30}, {2, 20}, {4, 40}};
  const std::string file = NpyFile(1, NpyHeaderOf("<c16", "(2, 2)", true), Bytes(column_major));
  absl::StatusOr<v1::Matrix> matrix = ParseNpy(file, "f.npy");
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(*ReadMatrix<std::complex<double>>(*matrix),
            (std::vector<std::complex<double>>{{1, 10}, {2, 20}, {3, 30}, {4, 40}}));
}

TEST(NpyRead, OneDimensionalArrayIsAColumn) {
  const std::string file = NpyFile(1, NpyHeaderOf("<f8", "(3,)"), Bytes<double>({1, 2, 3}));
  absl::StatusOr<v1::Matrix> matrix = ParseNpy(file, "v.npy");
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(matrix->rows(), 3);
  EXPECT_EQ(matrix->cols(), 1);
}

TEST(NpyRead, Version2HeaderWithFourByteLength) {
  const std::string file = NpyFile(2, NpyHeaderOf("<u4", "(1, 2)"), Bytes<uint32_t>({7, 9}));
  absl::StatusOr<v1::Matrix> matrix = ParseNpy(file, "v2.npy");
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(*ReadMatrix<uint32_t>(*matrix), (std::vector<uint32_t>{7, 9}));
}

TEST(NpyRead, Version3AndKeysInAnyOrderWithDoubleQuotes) {
  const std::string file = NpyFile(
      3, "{\"shape\": (1, 1), \"fortran_order\": False, \"descr\": \"<f4\"}", Bytes<float>({2.5f}));
  absl::StatusOr<v1::Matrix> matrix = ParseNpy(file, "v3.npy");
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(matrix->dtype(), v1::DTYPE_FLOAT32);
  EXPECT_EQ(*ReadMatrix<float>(*matrix), (std::vector<float>{2.5f}));
}

TEST(NpyRead, PythonTwoLongSuffixInShape) {
  const std::string file = NpyFile(1, NpyHeaderOf("<f8", "(1L, 2L)"), Bytes<double>({1, 2}));
  absl::StatusOr<v1::Matrix> matrix = ParseNpy(file, "py2.npy");
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(matrix->cols(), 2);
}

void ExpectError(const std::string& file, absl::string_view what) {
  absl::StatusOr<v1::Matrix> matrix = ParseNpy(file, "bad.npy");
  ASSERT_FALSE(matrix.ok());
  EXPECT_EQ(matrix.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(matrix.status().message(), HasSubstr("bad.npy"));
  EXPECT_THAT(matrix.status().message(), HasSubstr(what));
}

TEST(NpyErrors, BadMagic) {
  std::string file = NpyFile(1, NpyHeaderOf("<f8", "(1, 1)"), Bytes<double>({1}));
  file[1] = 'M';
  ExpectError(file, "bad magic");
}

TEST(NpyErrors, EmptyFile) { ExpectError("", "bad magic"); }

TEST(NpyErrors, UnknownVersion) {
  std::string file = NpyFile(1, NpyHeaderOf("<f8", "(1, 1)"), Bytes<double>({1}));
  file[6] = 4;
  ExpectError(file, "version 4.0");
}

TEST(NpyErrors, TruncatedHeader) {
  const std::string file = NpyFile(1, NpyHeaderOf("<f8", "(1, 1)"), Bytes<double>({1}));
  ExpectError(file.substr(0, 40), "truncated");
}

TEST(NpyErrors, TruncatedData) {
  const std::string file = NpyFile(1, NpyHeaderOf("<f8", "(2, 2)"), Bytes<double>({1, 2, 3}));
  ExpectError(file, "truncated data: 24 bytes, want 2*2*8 = 32");
}

TEST(NpyErrors, TrailingData) {
  const std::string file = NpyFile(1, NpyHeaderOf("<f8", "(1, 1)"), Bytes<double>({1, 2}));
  ExpectError(file, "8 bytes after");
}

TEST(NpyErrors, UnsupportedDtype) {
  ExpectError(NpyFile(1, NpyHeaderOf("<i4", "(1, 1)"), Bytes<int32_t>({1})),
              "unsupported dtype '<i4'");
}

TEST(NpyErrors, BigEndianDtype) {
  ExpectError(NpyFile(1, NpyHeaderOf(">f8", "(1, 1)"), Bytes<double>({1})), "big-endian");
}

TEST(NpyErrors, StructuredDtype) {
  ExpectError(NpyFile(1, "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }",
                      Bytes<double>({1})),
              "structured");
}

TEST(NpyErrors, ThreeDimensionalShape) {
  ExpectError(NpyFile(1, NpyHeaderOf("<f8", "(1, 1, 1)"), Bytes<double>({1})),
              "unsupported shape (1, 1, 1)");
}

TEST(NpyErrors, ScalarShape) {
  ExpectError(NpyFile(1, NpyHeaderOf("<f8", "()"), Bytes<double>({1})), "unsupported shape ()");
}

TEST(NpyErrors, MissingShapeKey) {
  ExpectError(NpyFile(1, "{'descr': '<f8', 'fortran_order': False}", Bytes<double>({1})),
              "no 'shape'");
}

TEST(NpyErrors, MalformedHeader) {
  ExpectError(
      NpyFile(1, "{'descr': '<f8', 'fortran_order': Maybe, 'shape': (1, 1)}", Bytes<double>({1})),
      "malformed header");
}

TEST(NpyErrors, NegativeDimension) {
  ExpectError(NpyFile(1, NpyHeaderOf("<f8", "(-1, 1)"), ""), "malformed header");
}

TEST(NpyErrors, ShapeTooLargeForMemory) {
  ExpectError(NpyFile(1, NpyHeaderOf("<f8", "(4294967296, 4294967296)"), ""), "too large");
}

TEST(NpySerialize, RejectsDataThatDoesNotMatchTheShape) {
  v1::Matrix matrix = MakeMatrix<double>(1, 2, std::vector<double>{1, 2});
  matrix.set_rows(2);
  EXPECT_EQ(SerializeNpy(matrix).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NpyFile, WriteThenReadThroughTheFileSystem) {
  const std::string path = absl::StrCat(testing::TempDir(), "/matrixd_npy_file_test.npy");
  const v1::Matrix matrix = MakeMatrix<double>(2, 2, std::vector<double>{1, -2, 3.5, 4});
  ASSERT_TRUE(WriteNpyFile(matrix, path).ok());
  absl::StatusOr<v1::Matrix> read = ReadMatrixFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->data(), matrix.data());
  std::remove(path.c_str());
}

TEST(NpyFile, MissingFileIsNotFoundAndNamesThePath) {
  absl::StatusOr<v1::Matrix> read = ReadMatrixFile("/nonexistent/dir/a.npy");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(read.status().message(), HasSubstr("/nonexistent/dir/a.npy"));
}

TEST(MatrixFile, UnknownExtensionIsRejected) {
  absl::StatusOr<v1::Matrix> read = ReadMatrixFile("matrix.csv");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr(".npy or .mtx"));
}

}  // namespace
}  // namespace matrixd
