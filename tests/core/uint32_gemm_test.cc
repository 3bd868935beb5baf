// The CPU's UINT32 product kernel, MultiplyAddUInt32 (core/cpu/block_sparse.h; the dense and
// block-sparse UINT32 products run on it): C += A B mod 2^32, against a schoolbook product in
// 64-bit integers.
#include <cstdint>
#include <random>
#include <vector>

#include "core/cpu/block_sparse.h"
#include "gtest/gtest.h"

namespace matrixd::cpu {
namespace {

constexpr uint32_t kPadding = 0xdeadbeef;

struct Operands {
  int64_t m, n, k, lda, ldb, ldc;
  std::vector<uint32_t> a, b, c;
};

// Leading dimensions `pad` wider than the rows; entries from `fill`, padding kPadding.
template <typename Fill>
Operands MakeOperands(int64_t m, int64_t n, int64_t k, int64_t pad, Fill fill) {
  Operands x{m, n, k, k + pad, n + pad, n + pad, {}, {}, {}};
  const auto matrix = [&](int64_t rows, int64_t cols, int64_t ld) {
    std::vector<uint32_t> v(static_cast<size_t>(rows * ld), kPadding);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) v[i * ld + j] = fill();
    return v;
  };
  x.a = matrix(m, k, x.lda);
  x.b = matrix(k, n, x.ldb);
  x.c = matrix(m, n, x.ldc);
  return x;
}

Operands RandomOperands(int64_t m, int64_t n, int64_t k, int64_t pad, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  return MakeOperands(m, n, k, pad, [&] { return static_cast<uint32_t>(rng()); });
}

// Runs the kernel and compares every entry of C (padding included) with the 64-bit reference.
void ExpectProduct(const Operands& x) {
  std::vector<uint32_t> c = x.c;
  MultiplyAddUInt32(x.m, x.n, x.k, x.a.data(), x.lda, x.b.data(), x.ldb, c.data(), x.ldc);
  for (int64_t i = 0; i < x.m; ++i) {
    for (int64_t j = 0; j < x.ldc; ++j) {
      uint64_t want = x.c[i * x.ldc + j];
      if (j < x.n) {
        for (int64_t kk = 0; kk < x.k; ++kk) {
          want += uint64_t{x.a[i * x.lda + kk]} * x.b[kk * x.ldb + j];  // wraps mod 2^64
        }
      }
      ASSERT_EQ(c[i * x.ldc + j], static_cast<uint32_t>(want)) << "C[" << i << ", " << j << "]";
    }
  }
}

TEST(Uint32Gemm, MatchesSchoolbookModuloTwoToThe32) {
  ExpectProduct(RandomOperands(37, 29, 53, 0, 1));
}

TEST(Uint32Gemm, OddSizesWithPaddedLeadingDimensionsLeaveThePaddingAlone) {
  ExpectProduct(RandomOperands(67, 45, 131, 5, 2));
}

TEST(Uint32Gemm, LargestEntriesWrapAround) {
  // (2^32 - 1)^2 k + c: every product and every sum wraps.
  ExpectProduct(MakeOperands(4, 6, 300, 1, [] { return ~uint32_t{0}; }));
}

TEST(Uint32Gemm, AddsToC) {
  Operands x = MakeOperands(2, 2, 1, 0, [] { return uint32_t{3}; });
  std::vector<uint32_t> c = x.c;  // 3 everywhere
  MultiplyAddUInt32(x.m, x.n, x.k, x.a.data(), x.lda, x.b.data(), x.ldb, c.data(), x.ldc);
  EXPECT_EQ(c, std::vector<uint32_t>(4, 3 + 3 * 3));
}

TEST(Uint32Gemm, OneByOneByOne) { ExpectProduct(RandomOperands(1, 1, 1, 0, 3)); }

TEST(Uint32Gemm, EmptyInnerDimensionLeavesCUnchanged) {
  ExpectProduct(RandomOperands(3, 4, 0, 2, 4));
}

}  // namespace
}  // namespace matrixd::cpu
