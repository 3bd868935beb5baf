// ValidateMatrix's scan for Inf and NaN (core/validation.h): the first non-finite entry is named
// for every floating dtype, wherever it lies — within a block, at a block's edge, in the last
// chunk of the threaded scan of a large operand — and finite matrices pass.
#include <cmath>
#include <complex>
#include <limits>
#include <string>

#include "core/matrix.h"
#include "core/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using ::testing::HasSubstr;

template <typename T>
Matrix Filled(int64_t rows, int64_t cols, DType dtype) {
  Matrix m(rows, cols, dtype);
  for (T& x : m.As<T>()) x = T(1.5);
  return m;
}

std::string Problem(const Matrix& m) {
  const absl::Status s = ValidateMatrix(m.view(), "matrix", Limits{});
  return s.ok() ? "ok" : std::string(s.message());
}

TEST(FiniteScan, NamesTheFirstNonFiniteEntryOfEveryDtype) {
  Matrix f = Filled<float>(3, 5, DType::kFloat32);
  EXPECT_EQ(Problem(f), "ok");
  f.As<float>()[7] = -std::numeric_limits<float>::infinity();
  EXPECT_THAT(Problem(f), HasSubstr("matrix[1, 2] is not finite"));

  Matrix c = Filled<std::complex<float>>(2, 2, DType::kComplex64);
  c.As<std::complex<float>>()[3] = {1.0f, std::nanf("")};  // the imaginary part only
  EXPECT_THAT(Problem(c), HasSubstr("matrix[1, 1] is not finite"));

  Matrix z = Filled<std::complex<double>>(2, 3, DType::kComplex128);
  z.As<std::complex<double>>()[4] = {std::numeric_limits<double>::infinity(), 0.0};
  EXPECT_THAT(Problem(z), HasSubstr("matrix[1, 1] is not finite"));

  // The largest finite double and subnormals are finite.
  Matrix d = Filled<double>(1, 3, DType::kFloat64);
  d.As<double>()[0] = std::numeric_limits<double>::max();
  d.As<double>()[1] = std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(Problem(d), "ok");
}

TEST(FiniteScan, LargeOperandsAreScannedInChunksAndTheEarliestHitWins) {
  // 8M doubles: the scan runs on several threads (chunks of >= 4M components).
  const int64_t rows = 2048;
  const int64_t cols = 4096;
  Matrix m = Filled<double>(rows, cols, DType::kFloat64);
  EXPECT_EQ(Problem(m), "ok");
  auto values = m.As<double>();
  const int64_t last = rows * cols - 1;
  values[last] = std::nan("");
  EXPECT_THAT(Problem(m), HasSubstr("matrix[2047, 4095] is not finite"));
  values[4096 * 1000 + 4095] = std::numeric_limits<double>::infinity();  // a block's last entry
  EXPECT_THAT(Problem(m), HasSubstr("matrix[1000, 4095] is not finite"));
  values[4096] = -std::numeric_limits<double>::infinity();  // a block's first entry
  EXPECT_THAT(Problem(m), HasSubstr("matrix[1, 0] is not finite"));
}

}  // namespace
}  // namespace matrixd
