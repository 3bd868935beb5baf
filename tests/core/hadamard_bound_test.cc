// HadamardBoundBits (core/hadamard_bound.h): never below log2 of Hadamard's bound computed in
// long double (64-bit mantissas), and above it by less than 1e-9 bits, on entries up to 2^63 - 1;
// -infinity for a zero row.
#include "core/hadamard_bound.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd {
namespace {

long double ReferenceBits(const std::vector<int64_t>& a, int64_t n) {
  long double bits = 0.0L;
  for (int64_t i = 0; i < n; ++i) {
    long double norm_squared = 0.0L;
    for (int64_t j = 0; j < n; ++j) {
      const auto x = static_cast<long double>(a[i * n + j]);
      norm_squared += x * x;
    }
    bits += 0.5L * std::log2(norm_squared);
  }
  return bits;
}

TEST(HadamardBoundBits, NeverBelowTheLongDoubleBoundAndCloseToIt) {
  std::mt19937_64 rng(5);
  for (const int64_t n : {1, 2, 3, 7, 64, 301}) {
    for (const int bits : {1, 20, 40, 62, 63}) {
      const int64_t high =
          bits == 63 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << bits) - 1;
      std::uniform_int_distribution<int64_t> entry(-high, high);
      std::vector<int64_t> a(static_cast<size_t>(n * n));
      for (int64_t& x : a) x = entry(rng);
      // One row of the largest magnitudes: the squares' rounding at its worst.
      for (int64_t j = 0; j < n; ++j) a[j] = j % 2 == 0 ? high : -high;
      const double ours = HadamardBoundBits(a, n);
      const long double reference = ReferenceBits(a, n);
      EXPECT_GE(static_cast<long double>(ours), reference) << "n = " << n << ", bits " << bits;
      EXPECT_LT(static_cast<long double>(ours) - reference, 1e-9L)
          << "n = " << n << ", bits " << bits;
    }
  }
}

TEST(HadamardBoundBits, AZeroRowIsMinusInfinity) {
  const std::vector<int64_t> a = {1, 2, 0, 0};
  EXPECT_EQ(HadamardBoundBits(a, 2), -std::numeric_limits<double>::infinity());
}

TEST(HadamardBoundBits, TheIdentityAndADiagonalAreExact) {
  const std::vector<int64_t> identity = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  EXPECT_NEAR(HadamardBoundBits(identity, 3), 0.0, 1e-11);
  const std::vector<int64_t> diagonal = {8, 0, 0, -1024};
  EXPECT_NEAR(HadamardBoundBits(diagonal, 2), 13.0, 1e-11);
}

}  // namespace
}  // namespace matrixd
