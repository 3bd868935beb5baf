// The float64 balanced-residue arithmetic of the GPU's modular LU (core/cuda/balanced_residue.h),
// run on the host against 128-bit integer arithmetic: the same code the kernels run (no GPU
// needed).
#include "core/cuda/balanced_residue.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/modular_arithmetic.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

__extension__ typedef __int128 Int128;

std::vector<uint64_t> Primes() {
  return {2,        3,        5,          65521,      (uint64_t{1} << 24) - 3,
          16777259, 67108859, 2147483629, 2147483647, 4294967291};
}

// The balanced residue of an exact integer.
int64_t Balanced(Int128 x, uint64_t p) {
  Int128 r = x % static_cast<Int128>(p);
  if (r < 0) r += p;
  if (r > static_cast<Int128>(p / 2)) r -= p;
  return static_cast<int64_t>(r);
}

// Balanced residues worth trying: the extremes and random ones.
std::vector<double> Samples(uint64_t p, std::mt19937_64& rng) {
  const int64_t half = static_cast<int64_t>(p / 2);
  std::vector<double> values = {0.0, 1.0, -1.0, static_cast<double>(half),
                                static_cast<double>(-half)};
  for (int i = 0; i < 40; ++i) {
    values.push_back(static_cast<double>(Balanced(static_cast<Int128>(rng() % p), p)));
  }
  return values;
}

// Same residue class, in range. p = 2 has two representatives of 1 (-1 and 1).
void ExpectResidue(double got, Int128 exact, uint64_t p) {
  ASSERT_LE(std::abs(got), static_cast<double>(p / 2)) << "p=" << p;
  ASSERT_EQ(Balanced(static_cast<Int128>(got), p), Balanced(exact, p)) << "p=" << p;
  if (p > 2) {
    ASSERT_EQ(static_cast<int64_t>(got), Balanced(exact, p)) << "p=" << p;
  }
}

TEST(BalancedModulus, MulSubMatchesInt128) {
  std::mt19937_64 rng(1);
  for (const uint64_t p : Primes()) {
    const BalancedModulus f = BalancedModulus::Of(p);
    const std::vector<double> values = Samples(p, rng);
    for (const double a : values) {
      for (const double b : values) {
        for (const double c : {values[3], values[4], values[7], values[20]}) {
          const Int128 exact =
              static_cast<Int128>(a) - static_cast<Int128>(b) * static_cast<Int128>(c);
          ExpectResidue(f.MulSub(a, b, c), exact, p);
        }
        ExpectResidue(f.Mul(a, b), static_cast<Int128>(a) * static_cast<Int128>(b), p);
      }
    }
  }
}

TEST(BalancedModulus, MulMinusMulMatchesInt128) {
  std::mt19937_64 rng(11);
  for (const uint64_t p : Primes()) {
    const BalancedModulus f = BalancedModulus::Of(p);
    const std::vector<double> values = Samples(p, rng);
    for (const double a : values) {
      for (const double b : values) {
        for (const double c : {values[3], values[4], values[9], values[30]}) {
          for (const double d : {values[3], values[4], values[2], values[17]}) {
            const Int128 exact = static_cast<Int128>(a) * static_cast<Int128>(b) -
                                 static_cast<Int128>(c) * static_cast<Int128>(d);
            ExpectResidue(f.MulMinusMul(a, b, c, d), exact, p);
          }
        }
      }
    }
  }
}

// The leaf's elimination keeps its entries unreduced between steps (|x| <= 2p): MulMinusMulLazy
// stays within 2p on such operands, and MulMinusMul and Mul reduce them.
TEST(BalancedModulus, LazyOperandsUpToTwiceP) {
  std::mt19937_64 rng(12);
  for (const uint64_t p : Primes()) {
    const BalancedModulus f = BalancedModulus::Of(p);
    const std::vector<double> balanced = Samples(p, rng);
    const double twice = 2.0 * static_cast<double>(p);
    std::vector<double> wide = {twice, -twice, twice - 1, -(twice - 1), static_cast<double>(p)};
    for (int i = 0; i < 20; ++i) {
      wide.push_back(static_cast<double>(static_cast<int64_t>(rng() % (4 * p + 1)) -
                                         static_cast<int64_t>(2 * p)));
    }
    for (const double a : balanced) {
      for (const double b : wide) {
        for (const double c : {balanced[3], balanced[4], balanced[9], balanced[30]}) {
          for (const double d : {wide[0], wide[1], wide[7], wide[19]}) {
            const Int128 exact = static_cast<Int128>(a) * static_cast<Int128>(b) -
                                 static_cast<Int128>(c) * static_cast<Int128>(d);
            const double lazy = f.MulMinusMulLazy(a, b, c, d);
            ASSERT_EQ(lazy, std::trunc(lazy));
            ASSERT_LE(std::abs(lazy), twice) << "p=" << p;
            ASSERT_EQ(Balanced(static_cast<Int128>(lazy), p), Balanced(exact, p)) << "p=" << p;
            ExpectResidue(f.MulMinusMul(a, b, c, d), exact, p);
          }
        }
        ExpectResidue(f.Mul(b, a), static_cast<Int128>(a) * static_cast<Int128>(b), p);
      }
    }
  }
}

TEST(BalancedModulus, ReduceTakesSumsUpToTwoToThe53) {
  std::mt19937_64 rng(2);
  for (const uint64_t p : Primes()) {
    const BalancedModulus f = BalancedModulus::Of(p);
    const double limit = std::min(9007199254740992.0, 1125899906842624.0 * static_cast<double>(p));
    for (double x : {0.0, 1.0, -1.0, limit, -limit, limit - 1, -(limit - 1)}) {
      ExpectResidue(f.Reduce(x), static_cast<Int128>(x), p);
    }
    for (int i = 0; i < 1000; ++i) {
      const int64_t x =
          static_cast<int64_t>(rng() % static_cast<uint64_t>(limit)) * (i % 2 == 0 ? 1 : -1);
      ExpectResidue(f.Reduce(static_cast<double>(x)), x, p);
    }
  }
}

TEST(BalancedModulus, InverseTimesValueIsOne) {
  std::mt19937_64 rng(3);
  for (const uint64_t p : Primes()) {
    const BalancedModulus f = BalancedModulus::Of(p);
    for (const double a : Samples(p, rng)) {
      if (a == 0.0) continue;
      ExpectResidue(f.Mul(f.Inverse(a), a), 1, p);
    }
  }
}

TEST(BalancedModulus, FromSignedAndToCanonicalMatchReduceSigned) {
  std::mt19937_64 rng(4);
  for (const uint64_t p : Primes()) {
    const BalancedModulus f = BalancedModulus::Of(p);
    for (const int64_t v :
         {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), int64_t{-1},
          int64_t{0}, -static_cast<int64_t>(p), static_cast<int64_t>(p / 2 + 1),
          static_cast<int64_t>(rng()), static_cast<int64_t>(rng()),
          // Both sides of the bound where Reduce takes over from the integer division.
          int64_t{1} << 50, (int64_t{1} << 50) + 1, -(int64_t{1} << 50), -(int64_t{1} << 50) - 1,
          (int64_t{1} << 50) - 1, static_cast<int64_t>(rng() >> 14),
          -static_cast<int64_t>(rng() >> 14), static_cast<int64_t>(rng() >> 44)}) {
      const double r = f.FromSigned(v);
      EXPECT_LE(std::abs(r), static_cast<double>(p / 2)) << v << " mod " << p;
      EXPECT_EQ(f.ToCanonical(r), ReduceSigned(v, p)) << v << " mod " << p;
    }
  }
}

TEST(BalancedModulus, PiecesRebuildTheResidueWithinSixteenBits) {
  std::mt19937_64 rng(5);
  for (const uint64_t p : Primes()) {
    for (const double b : Samples(p, rng)) {
      const double high = HighPiece(b);
      const double low = LowPiece(b, high);
      EXPECT_EQ(kPieceBase * high + low, b);
      EXPECT_LE(std::abs(high), 32768.0);
      EXPECT_LE(std::abs(low), 32768.0);
    }
  }
}

// The DGEMM bound the LU relies on: depth products of the largest residue and the largest piece
// (or residue, for one piece), accumulated in float64 in any order, stay exact.
TEST(BalancedModulus, ProductPiecesKeepEverySumExact) {
  for (const uint64_t p : Primes()) {
    for (const int64_t depth : {int64_t{64}, int64_t{128}}) {
      const int pieces = ProductPieces(p, depth);
      const double half = static_cast<double>(p / 2);
      const double factor = pieces == 1 ? half : 32768.0;
      const Int128 bound =
          static_cast<Int128>(depth) * static_cast<Int128>(half) * static_cast<Int128>(factor) +
          (pieces == 1 ? static_cast<Int128>(half) : 0);
      EXPECT_LE(bound, static_cast<Int128>(1) << 53) << "p=" << p << " depth=" << depth;
      double sum = pieces == 1 ? half : 0.0;
      for (int64_t t = 0; t < depth; ++t) sum += half * factor;
      const BalancedModulus f = BalancedModulus::Of(p);
      ExpectResidue(f.Reduce(sum), bound, p);
    }
  }
  EXPECT_EQ(ProductPieces(65521, 128), 1);
  EXPECT_EQ(ProductPieces(67108859, 128), 2);
  EXPECT_EQ(ProductPieces(2147483629, 128), 2);
}

}  // namespace
}  // namespace matrixd::cuda
