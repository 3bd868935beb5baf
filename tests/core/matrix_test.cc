#include "core/matrix.h"

#include <complex>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd {
namespace {

TEST(Matrix, NewMatrixIsAllZeroEvenOnReusedHeapMemory) {
  for (int round = 0; round < 50; ++round) {
    {
      // Leave non-zero garbage on the heap for the next allocation to pick up.
      std::vector<uint8_t> garbage(4096 + round * 16, 0xAB);
      volatile uint8_t sink = garbage[round];
      (void)sink;
    }
    Matrix m(16, 16, DType::kComplex128);
    for (std::byte b : std::span<const std::byte>(m.bytes(), m.byte_size())) {
      ASSERT_EQ(b, std::byte{0});
    }
  }
}

TEST(Matrix, StorageIsAlignedForEveryElementType) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kComplex64, DType::kComplex128,
                      DType::kInt64, DType::kUInt32}) {
    Matrix m(3, 5, dtype);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.bytes()) % 16, 0u) << DTypeName(dtype);
    EXPECT_EQ(m.byte_size(), 15 * ElementSize(dtype));
  }
}

TEST(Matrix, FromValuesRoundTrips) {
  const std::vector<std::complex<float>> values = {{1, 2}, {3, 4},  {5, 6},
                                                   {7, 8}, {9, 10}, {11, 12}};
  const Matrix m = Matrix::FromValues(2, 3, values);
  EXPECT_EQ(m.dtype(), DType::kComplex64);
  EXPECT_EQ(m.As<std::complex<float>>()[4], std::complex<float>(9, 10));
  const Matrix copy = Matrix::CopyOf(m.view());
  EXPECT_EQ(copy.As<std::complex<float>>()[5], std::complex<float>(11, 12));
}

}  // namespace
}  // namespace matrixd
