// SubtractProduct (core/cpu/modular_gemm.h), C -= A B over Z/p in both field representations,
// against a schoolbook product in 128-bit integers. The sizes cross the kernels' tiles (32-row
// tasks, 16-column strips, 512-column tasks) and the fields' reduction intervals, with the
// residues that make the sums largest.
#include "core/cpu/modular_gemm.h"

#include <cstdint>
#include <random>
#include <vector>

#include "core/cpu/modular_fields.h"
#include "core/modular_arithmetic.h"
#include "gtest/gtest.h"

namespace matrixd::cpu {
namespace {

__extension__ typedef unsigned __int128 Uint128;

constexpr uint64_t kLargestPrime = (uint64_t{1} << 62) - 57;  // below 2^62
constexpr uint64_t kLargestDoublePrime = 4294967291;          // below 2^32: split products
constexpr uint64_t kLargestUnsplitPrime = 33554393;           // below 2^25: whole products
constexpr uint64_t kSmallestSplitPrime = 33554467;            // above 2^25

// Residue matrices (row-major with leading dimensions) and the reference C - A B mod p.
struct Problem {
  int64_t m, n, k, lda, ldb, ldc;
  std::vector<uint64_t> a, b, c;

  uint64_t Want(int64_t i, int64_t j, uint64_t p) const {
    Uint128 sum = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      sum = (sum + Uint128{a[i * lda + kk]} * b[kk * ldb + j]) % p;
    }
    return SubMod(c[i * ldc + j], static_cast<uint64_t>(sum), p);
  }
};

// Entries of the padding (beyond each row's width) are kPadding, to show they stay untouched.
constexpr uint64_t kPadding = 7;

// `fill` gives each entry; leading dimensions 3 wider than the rows.
template <typename Fill>
Problem MakeProblem(int64_t m, int64_t n, int64_t k, Fill fill) {
  Problem x{m, n, k, k + 3, n + 3, n + 3, {}, {}, {}};
  x.a.assign(static_cast<size_t>(m * x.lda), kPadding);
  x.b.assign(static_cast<size_t>(k * x.ldb), kPadding);
  x.c.assign(static_cast<size_t>(m * x.ldc), kPadding);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) x.a[i * x.lda + j] = fill();
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) x.b[i * x.ldb + j] = fill();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) x.c[i * x.ldc + j] = fill();
  return x;
}

Problem RandomProblem(int64_t m, int64_t n, int64_t k, uint64_t p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> residue(0, p - 1);
  return MakeProblem(m, n, k, [&] { return residue(rng); });
}

// Every entry `value`: with p - 1 (uint64) or p / 2 (balanced) the accumulators grow fastest.
Problem ConstantProblem(int64_t m, int64_t n, int64_t k, uint64_t value) {
  return MakeProblem(m, n, k, [&] { return value; });
}

// Runs the uint64 kernel on x and checks every entry of C, and that the padding is untouched.
void ExpectUint64Product(const Problem& x, uint64_t p, int threads) {
  std::vector<uint64_t> c = x.c;
  SubtractProduct(Uint64Field(p),
                  {.m = x.m,
                   .n = x.n,
                   .k = x.k,
                   .a = x.a.data(),
                   .lda = x.lda,
                   .b = x.b.data(),
                   .ldb = x.ldb,
                   .c = c.data(),
                   .ldc = x.ldc},
                  threads);
  for (int64_t i = 0; i < x.m; ++i) {
    for (int64_t j = 0; j < x.ldc; ++j) {
      const uint64_t want = j < x.n ? x.Want(i, j, p) : kPadding;
      ASSERT_EQ(c[i * x.ldc + j], want) << "C[" << i << ", " << j << "] mod " << p;
    }
  }
}

// The same through the float64 kernel: residues in balanced form in, balanced form out.
void ExpectBalancedProduct(const Problem& x, uint64_t p, int threads) {
  const BalancedDoubleField field(p);
  const auto balanced = [&](const std::vector<uint64_t>& v) {
    std::vector<double> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = field.FromResidue(v[i] % p);
    return out;
  };
  const std::vector<double> a = balanced(x.a);
  const std::vector<double> b = balanced(x.b);
  std::vector<double> c = balanced(x.c);
  SubtractProduct(field,
                  {.m = x.m,
                   .n = x.n,
                   .k = x.k,
                   .a = a.data(),
                   .lda = x.lda,
                   .b = b.data(),
                   .ldb = x.ldb,
                   .c = c.data(),
                   .ldc = x.ldc},
                  threads);
  const double half = static_cast<double>(p / 2);
  for (int64_t i = 0; i < x.m; ++i) {
    for (int64_t j = 0; j < x.ldc; ++j) {
      const double got = c[i * x.ldc + j];
      if (j >= x.n) {
        ASSERT_EQ(got, field.FromResidue(kPadding % p));
        continue;
      }
      ASSERT_LE(got < 0 ? -got : got, half) << "C[" << i << ", " << j << "] not balanced";
      ASSERT_EQ(field.ToResidue(got), x.Want(i, j, p)) << "C[" << i << ", " << j << "] mod " << p;
    }
  }
}

TEST(ModularGemm, TestPrimesArePrime) {
  for (const uint64_t p :
       {kLargestPrime, kLargestDoublePrime, kLargestUnsplitPrime, kSmallestSplitPrime}) {
    EXPECT_TRUE(IsPrime(p)) << p;
  }
  EXPECT_FALSE(BalancedDoubleField(kLargestUnsplitPrime).split());
  EXPECT_TRUE(BalancedDoubleField(kSmallestSplitPrime).split());
}

TEST(ModularGemm, Uint64MatchesSchoolbookAcrossTilesAndStrips) {
  // 70 rows: three row tasks; 37 columns: two full strips and a tail.
  ExpectUint64Product(RandomProblem(70, 37, 45, kLargestPrime, 1), kLargestPrime, 2);
}

TEST(ModularGemm, Uint64MatchesSchoolbookBeyondOneColumnTask) {
  ExpectUint64Product(RandomProblem(3, 530, 20, kLargestPrime, 2), kLargestPrime, 2);
}

// p - 1 everywhere at the largest prime: the accumulators must fold every ~15 terms.
TEST(ModularGemm, Uint64LargestResiduesOverManyTermsFoldWithoutWrapping) {
  ExpectUint64Product(ConstantProblem(5, 17, 400, kLargestPrime - 1), kLargestPrime, 1);
}

TEST(ModularGemm, Uint64SmallestPrime) { ExpectUint64Product(RandomProblem(9, 9, 9, 2, 3), 2, 1); }

TEST(ModularGemm, Uint64OneByOneByOne) {
  ExpectUint64Product(RandomProblem(1, 1, 1, kLargestPrime, 4), kLargestPrime, 1);
}

TEST(ModularGemm, Uint64ThreadedProductEqualsTheSerialOne) {
  // Large enough (m n k >= 2^18) to spread over threads.
  ExpectUint64Product(RandomProblem(80, 80, 64, 1000000007, 5), 1000000007, 4);
}

TEST(ModularGemm, EmptyInnerDimensionLeavesCUnchanged) {
  ExpectUint64Product(RandomProblem(4, 5, 0, kLargestPrime, 6), kLargestPrime, 1);
  ExpectBalancedProduct(RandomProblem(4, 5, 0, kLargestDoublePrime, 6), kLargestDoublePrime, 1);
}

TEST(ModularGemm, BalancedWholeProductsMatchSchoolbook) {
  ExpectBalancedProduct(RandomProblem(40, 23, 50, kLargestUnsplitPrime, 7), kLargestUnsplitPrime,
                        2);
}

// |residue| = p/2 everywhere, with more terms than fit between two reductions.
TEST(ModularGemm, BalancedWholeProductsReduceBetweenTermBlocks) {
  const BalancedDoubleField field(kLargestUnsplitPrime);
  const int64_t k = 2 * field.terms() + 5;
  ExpectBalancedProduct(ConstantProblem(3, 5, k, kLargestUnsplitPrime / 2), kLargestUnsplitPrime,
                        1);
}

TEST(ModularGemm, BalancedSplitProductsMatchSchoolbook) {
  ExpectBalancedProduct(RandomProblem(40, 23, 50, kSmallestSplitPrime, 8), kSmallestSplitPrime, 2);
  ExpectBalancedProduct(RandomProblem(40, 23, 50, kLargestDoublePrime, 9), kLargestDoublePrime, 2);
}

TEST(ModularGemm, BalancedSplitProductsReduceBetweenTermBlocks) {
  const BalancedDoubleField field(kLargestDoublePrime);
  const int64_t k = 2 * field.terms() + 5;
  ExpectBalancedProduct(ConstantProblem(3, 5, k, kLargestDoublePrime / 2), kLargestDoublePrime, 1);
  ExpectBalancedProduct(ConstantProblem(3, 5, k, kLargestDoublePrime / 2 + 1), kLargestDoublePrime,
                        1);
}

}  // namespace
}  // namespace matrixd::cpu
