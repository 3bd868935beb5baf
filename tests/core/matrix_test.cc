#include "core/matrix.h"

#include <complex>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "core/result_destinations.h"
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
    // ResultDestinations::Make clears a new matrix too (its storage is not cleared by itself).
    const Matrix made = ResultDestinations().Make("lu", 16, 16, DType::kComplex128);
    for (std::byte b : std::span<const std::byte>(made.bytes(), made.byte_size())) {
      ASSERT_EQ(b, std::byte{0});
    }
  }
}

TEST(Matrix, ForOverwriteHasTheShapeAndAlignmentAndOwnsItsBytes) {
  Matrix m = Matrix::ForOverwrite(3, 5, DType::kComplex128);
  EXPECT_EQ(m.rows(), 3);
  EXPECT_EQ(m.cols(), 5);
  EXPECT_EQ(m.dtype(), DType::kComplex128);
  EXPECT_FALSE(m.borrowed());
  EXPECT_EQ(m.byte_size(), 15 * ElementSize(DType::kComplex128));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.bytes()) % 16, 0u);
  for (int i = 0; i < 15; ++i) m.As<std::complex<double>>()[i] = {1.0 * i, -1.0};
  const Matrix copy = m;
  EXPECT_EQ(copy.As<std::complex<double>>()[14], std::complex<double>(14.0, -1.0));
  EXPECT_TRUE(Matrix::ForOverwrite(0, 4, DType::kFloat64).empty());
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

TEST(Matrix, BorrowingUsesTheCallersBytesAndCopiesOwnTheirs) {
  std::vector<double> memory = {1, 2, 3, 4, 5, 6};
  Matrix borrowed =
      Matrix::Borrowing(2, 3, DType::kFloat64, reinterpret_cast<std::byte*>(memory.data()));
  EXPECT_TRUE(borrowed.borrowed());
  EXPECT_EQ(borrowed.bytes(), reinterpret_cast<std::byte*>(memory.data()));
  borrowed.As<double>()[5] = 60;
  EXPECT_EQ(memory[5], 60);

  const Matrix copy = borrowed;  // owns its bytes
  EXPECT_FALSE(copy.borrowed());
  EXPECT_NE(copy.bytes(), borrowed.bytes());
  EXPECT_EQ(copy.As<double>()[5], 60);
  memory[0] = -1;
  EXPECT_EQ(copy.As<double>()[0], 1);

  Matrix moved = std::move(borrowed);  // keeps borrowing
  EXPECT_TRUE(moved.borrowed());
  EXPECT_EQ(moved.As<double>()[0], -1);
  EXPECT_EQ(moved.rows(), 2);
}

TEST(ResultDestinations, UsesOnlyAnEntryOfTheResultsExactSize) {
  std::vector<std::byte> exact(4 * sizeof(double), std::byte{0x7f});
  std::vector<std::byte> wrong(3 * sizeof(double));
  ResultDestinations out;
  out.Add("lu", wrong);
  out.Add("lu", exact);
  const Matrix lu = out.Make("lu", 2, 2, DType::kFloat64);
  EXPECT_TRUE(lu.borrowed());
  EXPECT_EQ(lu.bytes(), exact.data());
  EXPECT_EQ(lu.As<double>()[3], 0.0);  // cleared, as a new matrix would be
  std::vector<std::byte> full(4 * sizeof(double), std::byte{0x7f});
  ResultDestinations overwrite;
  overwrite.Add("lu", full);
  EXPECT_EQ(overwrite.MakeForOverwrite("lu", 2, 2, DType::kFloat64).bytes(), full.data());
  EXPECT_EQ(full[0], std::byte{0x7f});  // left as it was
  EXPECT_FALSE(out.Make("l", 2, 2, DType::kFloat64).borrowed());
  EXPECT_FALSE(out.Make("lu", 1, 2, DType::kFloat64).borrowed());

  const Matrix source = Matrix::FromValues<double>(2, 2, {1, 2, 3, 4});
  const Matrix copy = out.CopyOf("lu", source.view());
  EXPECT_TRUE(copy.borrowed());
  EXPECT_EQ(std::memcmp(exact.data(), source.bytes(), source.byte_size()), 0);
}

}  // namespace
}  // namespace matrixd
