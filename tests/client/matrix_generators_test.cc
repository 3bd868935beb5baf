#include "client/matrix_generators.h"

#include <complex>
#include <cstdint>
#include <vector>

#include "client/client.h"
#include "client/matrix_values.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

TEST(RandomMatrix, SameSeedSameMatrixOtherSeedOtherMatrix) {
  EXPECT_EQ(RandomMatrix(5, 7, v1::DTYPE_FLOAT64, 3).data(), RandomMatrix(5, 7, v1::DTYPE_FLOAT64, 3).data());
  EXPECT_NE(RandomMatrix(5, 7, v1::DTYPE_FLOAT64, 3).data(), RandomMatrix(5, 7, v1::DTYPE_FLOAT64, 4).data());
}

TEST(RandomMatrix, EveryDtypeHasTheRightShapeAndSize) {
  for (v1::DType dtype :
       {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64, v1::DTYPE_COMPLEX64, v1::DTYPE_COMPLEX128, v1::DTYPE_INT64, v1::DTYPE_UINT32}) {
    const v1::Matrix m = RandomMatrix(3, 4, dtype, 1);
    EXPECT_EQ(m.dtype(), dtype);
    EXPECT_TRUE(CheckMatrixShape(m).ok()) << DTypeFlagName(dtype);
    EXPECT_EQ(m.rows(), 3);
    EXPECT_EQ(m.cols(), 4);
  }
}

TEST(RandomMatrix, FloatsAreInMinusOneToOneAndSpreadOut) {
  const std::vector<double> v = *ReadMatrix<double>(RandomMatrix(100, 100, v1::DTYPE_FLOAT64, 9));
  double min = 1;
  double max = -1;
  double sum = 0;
  for (double x : v) {
    ASSERT_GE(x, -1.0);
    ASSERT_LT(x, 1.0);
    min = std::min(min, x);
    max = std::max(max, x);
    sum += x;
  }
  EXPECT_LT(min, -0.99);
  EXPECT_GT(max, 0.99);
  EXPECT_LT(std::abs(sum / v.size()), 0.03);  // mean 0, standard error 0.006
}

TEST(RandomMatrix, ComplexHasRandomImaginaryParts) {
  const auto v = *ReadMatrix<std::complex<double>>(RandomMatrix(10, 10, v1::DTYPE_COMPLEX128, 2));
  int nonzero_imaginary = 0;
  for (const auto& x : v) {
    ASSERT_LE(std::abs(x.imag()), 1.0);
    nonzero_imaginary += x.imag() != 0;
  }
  EXPECT_EQ(nonzero_imaginary, 100);
}

TEST(RandomMatrix, Int64EntriesAreSmallAndCoverTheRange) {
  const std::vector<int64_t> v = *ReadMatrix<int64_t>(RandomMatrix(50, 50, v1::DTYPE_INT64, 5));
  std::vector<int> seen(19, 0);
  for (int64_t x : v) {
    ASSERT_GE(x, -9);
    ASSERT_LE(x, 9);
    ++seen[x + 9];
  }
  for (int count : seen) EXPECT_GT(count, 0);
}

TEST(RandomMatrix, Uint32UsesTheHighBits) {
  const std::vector<uint32_t> v = *ReadMatrix<uint32_t>(RandomMatrix(10, 10, v1::DTYPE_UINT32, 5));
  int high = 0;
  for (uint32_t x : v) high += x >= 0x80000000u;
  EXPECT_GT(high, 20);
  EXPECT_LT(high, 80);
}

TEST(RandomBlockSparseMatrix, BlocksAreAllZeroOrAllNonZero) {
  constexpr int64_t kN = 100;  // 7 x 7 blocks of 16, the edge ones 4 wide
  constexpr int64_t kBlock = 16;
  const std::vector<double> v =
      *ReadMatrix<double>(RandomBlockSparseMatrix(kN, kN, v1::DTYPE_FLOAT64, 11, kBlock, 0.5));
  int zero_blocks = 0;
  int full_blocks = 0;
  for (int64_t bi = 0; bi < kN; bi += kBlock) {
    for (int64_t bj = 0; bj < kN; bj += kBlock) {
      int zeros = 0;
      int entries = 0;
      for (int64_t i = bi; i < std::min(bi + kBlock, kN); ++i) {
        for (int64_t j = bj; j < std::min(bj + kBlock, kN); ++j) {
          zeros += v[i * kN + j] == 0;
          ++entries;
        }
      }
      ASSERT_TRUE(zeros == 0 || zeros == entries) << "block " << bi << "," << bj;
      (zeros == 0 ? full_blocks : zero_blocks) += 1;
    }
  }
  EXPECT_GT(zero_blocks, 5);  // 49 blocks at density 0.5
  EXPECT_GT(full_blocks, 5);
}

TEST(RandomBlockSparseMatrix, DensityZeroAndOne) {
  const std::vector<double> zero =
      *ReadMatrix<double>(RandomBlockSparseMatrix(8, 8, v1::DTYPE_FLOAT64, 1, 4, 0.0));
  for (double x : zero) EXPECT_EQ(x, 0.0);
  const std::vector<double> full =
      *ReadMatrix<double>(RandomBlockSparseMatrix(8, 8, v1::DTYPE_FLOAT64, 1, 4, 1.0));
  for (double x : full) EXPECT_NE(x, 0.0);
}

TEST(HilbertMatrix, EntriesAreReciprocals) {
  const std::vector<double> h = *ReadMatrix<double>(*HilbertMatrix(3, v1::DTYPE_FLOAT64));
  EXPECT_EQ(h, (std::vector<double>{1, 1.0 / 2, 1.0 / 3, 1.0 / 2, 1.0 / 3, 1.0 / 4, 1.0 / 3,
                                    1.0 / 4, 1.0 / 5}));
}

TEST(HilbertMatrix, ComplexAndFloat32AreSupported) {
  EXPECT_EQ(ReadMatrix<std::complex<float>>(*HilbertMatrix(2, v1::DTYPE_COMPLEX64))->at(3),
            std::complex<float>(1.0f / 3, 0));
  EXPECT_EQ(ReadMatrix<float>(*HilbertMatrix(1, v1::DTYPE_FLOAT32))->at(0), 1.0f);
}

TEST(HilbertMatrix, IntegerDtypesAreRejected) {
  EXPECT_EQ(HilbertMatrix(3, v1::DTYPE_INT64).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HilbertMatrix(3, v1::DTYPE_UINT32).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OnesMatrix, AllOnes) {
  EXPECT_EQ(*ReadMatrix<int64_t>(OnesMatrix(2, 3, v1::DTYPE_INT64)), std::vector<int64_t>(6, 1));
}

}  // namespace
}  // namespace matrixd
