#include <complex>
#include <cstdint>
#include <cstdio>
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

v1::Matrix ParseOrDie(absl::string_view text) {
  absl::StatusOr<v1::Matrix> matrix = ParseMatrixMarket(text, "m.mtx");
  EXPECT_TRUE(matrix.ok()) << matrix.status();
  return matrix.ok() ? *matrix : v1::Matrix();
}

TEST(MatrixMarket, CoordinateGeneralRealWithCommentsAndBlankLines) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket matrix coordinate real general\n"
      "% a comment\n"
      "%\n"
      "\n"
      "  2 3 3  \n"
      "1 1 1.5\n"
      "\n"
      "2 3 -2e-3\r\n"
      "1 3 4\n");
  ASSERT_EQ(m.dtype(), v1::DTYPE_FLOAT64);
  ASSERT_EQ(m.rows(), 2);
  ASSERT_EQ(m.cols(), 3);
  EXPECT_EQ(*ReadMatrix<double>(m), (std::vector<double>{1.5, 0, 4, 0, 0, -2e-3}));
}

TEST(MatrixMarket, CoordinateSymmetricIsMirrored) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket matrix coordinate real symmetric\n"
      "3 3 4\n"
      "1 1 2\n"
      "2 1 -1\n"
      "3 2 5\n"
      "3 3 7\n");
  EXPECT_EQ(*ReadMatrix<double>(m), (std::vector<double>{2, -1, 0, -1, 0, 5, 0, 5, 7}));
}

TEST(MatrixMarket, CoordinateSkewSymmetricIntegerIsNegatedAcross) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket matrix coordinate integer skew-symmetric\n"
      "2 2 1\n"
      "2 1 9007199254740993\n");  // 2^53 + 1: stays exact in int64
  ASSERT_EQ(m.dtype(), v1::DTYPE_INT64);
  EXPECT_EQ(*ReadMatrix<int64_t>(m),
            (std::vector<int64_t>{0, -9007199254740993, 9007199254740993, 0}));
}

TEST(MatrixMarket, CoordinateHermitianComplexIsConjugatedAcross) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket matrix coordinate complex hermitian\n"
      "2 2 3\n"
      "1 1 1 0\n"
      "2 1 2 3\n"
      "2 2 4 0\n");
  ASSERT_EQ(m.dtype(), v1::DTYPE_COMPLEX128);
  EXPECT_EQ(*ReadMatrix<std::complex<double>>(m),
            (std::vector<std::complex<double>>{{1, 0}, {2, -3}, {2, 3}, {4, 0}}));
}

TEST(MatrixMarket, CoordinateComplexGeneral) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket matrix coordinate complex general\n"
      "1 2 1\n"
      "1 2 -1.5 0.25\n");
  EXPECT_EQ(*ReadMatrix<std::complex<double>>(m),
            (std::vector<std::complex<double>>{{0, 0}, {-1.5, 0.25}}));
}

TEST(MatrixMarket, PatternGivesOnesAsFloat64) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket matrix coordinate pattern symmetric\n"
      "2 2 2\n"
      "1 1\n"
      "2 1\n");
  ASSERT_EQ(m.dtype(), v1::DTYPE_FLOAT64);
  EXPECT_EQ(*ReadMatrix<double>(m), (std::vector<double>{1, 1, 1, 0}));
}

TEST(MatrixMarket, DuplicateCoordinateEntriesAreSummed) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket matrix coordinate integer general\n"
      "1 1 2\n"
      "1 1 3\n"
      "1 1 -10\n");
  EXPECT_EQ(*ReadMatrix<int64_t>(m), (std::vector<int64_t>{-7}));
}

TEST(MatrixMarket, BannerWordsAreCaseInsensitive) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket MATRIX Coordinate Real General\n"
      "1 1 1\n"
      "1 1 3\n");
  EXPECT_EQ(*ReadMatrix<double>(m), (std::vector<double>{3}));
}

TEST(MatrixMarket, ArrayGeneralIsColumnMajor) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket matrix array real general\n"
      "2 3\n"
      "1\n4\n2\n5\n3\n6\n");
  EXPECT_EQ(*ReadMatrix<double>(m), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(MatrixMarket, ArraySymmetricListsTheLowerTriangleByColumns) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket matrix array integer symmetric\n"
      "3 3\n"
      "1\n2\n3\n4\n5\n6\n");
  EXPECT_EQ(*ReadMatrix<int64_t>(m), (std::vector<int64_t>{1, 2, 3, 2, 4, 5, 3, 5, 6}));
}

TEST(MatrixMarket, ArraySkewSymmetricListsTheStrictLowerTriangle) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket matrix array real skew-symmetric\n"
      "3 3\n"
      "1\n2\n3\n");
  EXPECT_EQ(*ReadMatrix<double>(m), (std::vector<double>{0, -1, -2, 1, 0, -3, 2, 3, 0}));
}

TEST(MatrixMarket, ArrayComplexHermitian) {
  const v1::Matrix m = ParseOrDie(
      "%%MatrixMarket matrix array complex hermitian\n"
      "2 2\n"
      "1 0\n"
      "0 1\n"
      "3 0\n");
  EXPECT_EQ(*ReadMatrix<std::complex<double>>(m),
            (std::vector<std::complex<double>>{{1, 0}, {0, -1}, {0, 1}, {3, 0}}));
}

TEST(MatrixMarket, OneByOneArray) {
  const v1::Matrix m = ParseOrDie("%%MatrixMarket matrix array real general\n1 1\n-0.5\n");
  EXPECT_EQ(*ReadMatrix<double>(m), (std::vector<double>{-0.5}));
}

void ExpectError(absl::string_view text, absl::string_view what) {
  absl::StatusOr<v1::Matrix> matrix = ParseMatrixMarket(text, "bad.mtx");
  ASSERT_FALSE(matrix.ok()) << "parsed: " << text;
  EXPECT_EQ(matrix.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(matrix.status().message(), HasSubstr("bad.mtx: "));
  EXPECT_THAT(matrix.status().message(), HasSubstr(what));
}

TEST(MatrixMarketErrors, MissingBanner) { ExpectError("2 2 1\n1 1 1\n", "line 1: bad banner"); }

TEST(MatrixMarketErrors, UnknownField) {
  ExpectError("%%MatrixMarket matrix coordinate quaternion general\n1 1 0\n",
              "unknown field 'quaternion'");
}

TEST(MatrixMarketErrors, HermitianNeedsComplexField) {
  ExpectError("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", "hermitian");
}

TEST(MatrixMarketErrors, PatternArrayIsRejected) {
  ExpectError("%%MatrixMarket matrix array pattern general\n1 1\n", "coordinate format");
}

TEST(MatrixMarketErrors, IndexOutOfRangeNamesTheLine) {
  ExpectError(
      "%%MatrixMarket matrix coordinate real general\n"
      "2 2 2\n"
      "1 1 1\n"
      "3 1 1\n",
      "line 4: index (3, 1) out of range for a 2 x 2 matrix");
}

TEST(MatrixMarketErrors, ZeroIndexIsOutOfRange) {
  ExpectError("%%MatrixMarket matrix coordinate real general\n2 2 1\n0 1 1\n", "out of range");
}

TEST(MatrixMarketErrors, EntryWithTooFewFields) {
  ExpectError("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1\n",
              "line 3: malformed entry: 3 fields, want 4");
}

TEST(MatrixMarketErrors, ValueIsNotANumber) {
  ExpectError("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 one\n",
              "line 3: 'one' is not a number");
}

TEST(MatrixMarketErrors, IntegerFieldRejectsAFraction) {
  ExpectError("%%MatrixMarket matrix array integer general\n1 1\n1.5\n", "not an int64");
}

TEST(MatrixMarketErrors, TooFewEntries) {
  ExpectError("%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 1\n",
              "truncated: 3 entries expected, 2 found");
}

TEST(MatrixMarketErrors, TooManyEntries) {
  ExpectError("%%MatrixMarket matrix array real general\n1 2\n1\n2\n3\n",
              "line 5: more entries than the 2");
}

TEST(MatrixMarketErrors, BadSizeLine) {
  ExpectError("%%MatrixMarket matrix coordinate real general\n2 2\n", "bad size line");
}

TEST(MatrixMarketErrors, NoSizeLine) {
  ExpectError("%%MatrixMarket matrix coordinate real general\n% only comments\n", "no size line");
}

TEST(MatrixMarketErrors, EntryAboveTheDiagonalOfSymmetricStorage) {
  ExpectError("%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n",
              "above the diagonal");
}

TEST(MatrixMarketErrors, NonSquareSymmetric) {
  ExpectError("%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n", "2 x 3 matrix cannot");
}

TEST(MatrixMarketErrors, NonRealHermitianDiagonal) {
  ExpectError("%%MatrixMarket matrix coordinate complex hermitian\n1 1 1\n1 1 1 2\n", "not real");
}

TEST(MatrixMarketErrors, DenseSizeTooLarge) {
  ExpectError("%%MatrixMarket matrix coordinate real general\n1000000 1000000 0\n", "exceeds");
}

TEST(MatrixMarketErrors, SummedDuplicatesThatOverflowInt64) {
  ExpectError(
      "%%MatrixMarket matrix coordinate integer general\n1 1 2\n"
      "1 1 9223372036854775807\n1 1 1\n",
      "overflows int64");
}

TEST(MatrixMarketFile, ReadsThroughTheFileSystemByExtension) {
  const std::string path = absl::StrCat(testing::TempDir(), "/matrixd_mm_test.MTX");
  FILE* file = std::fopen(path.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fputs("%%MatrixMarket matrix array real general\n1 1\n42\n", file);
  std::fclose(file);
  absl::StatusOr<v1::Matrix> matrix = ReadMatrixFile(path);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(*ReadMatrix<double>(*matrix), (std::vector<double>{42}));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace matrixd
