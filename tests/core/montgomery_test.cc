// MontgomeryModulus (core/cpu/montgomery.h) against 128-bit products reduced by division.
#include "core/cpu/montgomery.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd::cpu {
namespace {

__extension__ typedef unsigned __int128 Uint128;

uint64_t TimesModulo(uint64_t a, uint64_t b, uint64_t p) {
  return static_cast<uint64_t>(static_cast<Uint128>(a) * b % p);
}

// 2^64 mod p, by 128-bit division.
uint64_t RModulo(uint64_t p) { return static_cast<uint64_t>((Uint128{1} << 64) % p); }

// Odd moduli from the smallest to the largest allowed: 3, a 31-bit and a 61-bit prime, the largest
// prime below 2^62, and an odd composite (Montgomery needs p odd, not prime).
const std::vector<uint64_t>& Moduli() {
  static const std::vector<uint64_t> moduli = {3, 2147483647, (uint64_t{1} << 61) - 1,
                                               (uint64_t{1} << 62) - 57, (uint64_t{1} << 62) - 1};
  return moduli;
}

TEST(MontgomeryModulus, KeepsTheModulus) {
  for (const uint64_t p : Moduli()) EXPECT_EQ(MontgomeryModulus(p).modulus(), p);
}

TEST(MontgomeryModulus, RModPIsTwoToThe64ModP) {
  for (const uint64_t p : Moduli()) EXPECT_EQ(MontgomeryModulus(p).r_mod_p(), RModulo(p)) << p;
}

// Multiply(a, b) R = a b (mod p): multiplying back by R mod p gives the plain product.
TEST(MontgomeryModulus, MultiplyIsTheProductTimesRInverse) {
  std::mt19937_64 rng(1);
  for (const uint64_t p : Moduli()) {
    const MontgomeryModulus m(p);
    std::uniform_int_distribution<uint64_t> residue(0, p - 1);
    for (int i = 0; i < 2000; ++i) {
      const uint64_t a = residue(rng);
      const uint64_t b = residue(rng);
      const uint64_t got = m.Multiply(a, b);
      ASSERT_LT(got, p);
      ASSERT_EQ(TimesModulo(got, RModulo(p), p), TimesModulo(a, b, p))
          << a << " * " << b << " mod " << p;
    }
  }
}

TEST(MontgomeryModulus, MultiplyOfTheLargestResiduesIsExact) {
  for (const uint64_t p : Moduli()) {
    const MontgomeryModulus m(p);
    const uint64_t got = m.Multiply(p - 1, p - 1);
    EXPECT_EQ(TimesModulo(got, RModulo(p), p), 1u) << p;  // (-1)(-1) = 1
  }
}

TEST(MontgomeryModulus, MultiplyByZeroIsZero) {
  for (const uint64_t p : Moduli()) {
    EXPECT_EQ(MontgomeryModulus(p).Multiply(0, p - 1), 0u);
    EXPECT_EQ(MontgomeryModulus(p).Multiply(p - 1, 0), 0u);
  }
}

// Multiply(x, R mod p) = x R R^-1 = x: R mod p is Montgomery's form of 1.
TEST(MontgomeryModulus, MultiplyByRModPGivesTheOtherFactor) {
  std::mt19937_64 rng(2);
  for (const uint64_t p : Moduli()) {
    const MontgomeryModulus m(p);
    std::uniform_int_distribution<uint64_t> residue(0, p - 1);
    for (int i = 0; i < 100; ++i) {
      const uint64_t x = residue(rng);
      EXPECT_EQ(m.Multiply(x, m.r_mod_p()), x);
    }
  }
}

// Inputs anywhere in [0, 2p), as a chain of lazy products feeds them back: below 2p and congruent.
TEST(MontgomeryModulus, MultiplyLazyStaysBelowTwoPAndIsCongruent) {
  std::mt19937_64 rng(3);
  for (const uint64_t p : Moduli()) {
    const MontgomeryModulus m(p);
    std::uniform_int_distribution<uint64_t> lazy(0, 2 * p - 1);
    for (int i = 0; i < 2000; ++i) {
      const uint64_t a = lazy(rng);
      const uint64_t b = lazy(rng);
      const uint64_t got = m.MultiplyLazy(a, b);
      ASSERT_LT(got, 2 * p);
      ASSERT_EQ(TimesModulo(got % p, RModulo(p), p), TimesModulo(a % p, b % p, p));
    }
    const uint64_t top = m.MultiplyLazy(2 * p - 1, 2 * p - 1);
    EXPECT_LT(top, 2 * p);
    EXPECT_EQ(TimesModulo(top % p, RModulo(p), p), 1u);  // (2p - 1)^2 = 1 (mod p)
  }
}

TEST(MontgomeryModulus, ReduceSubtractsPOnlyFromValuesAtOrAboveP) {
  for (const uint64_t p : Moduli()) {
    const MontgomeryModulus m(p);
    EXPECT_EQ(m.Reduce(0), 0u);
    EXPECT_EQ(m.Reduce(p - 1), p - 1);
    EXPECT_EQ(m.Reduce(p), 0u);
    EXPECT_EQ(m.Reduce(2 * p - 1), p - 1);
  }
}

// The header's recipe for a chain of k factors: the lazy chain carries R^-(k-1), undone by
// multiplying with (R mod p)^(k-1).
TEST(MontgomeryModulus, ChainOfProductsTimesRToTheKMinusOneIsTheProduct) {
  std::mt19937_64 rng(4);
  for (const uint64_t p : Moduli()) {
    const MontgomeryModulus m(p);
    std::uniform_int_distribution<uint64_t> residue(1, p - 1);
    constexpr int kFactors = 50;
    uint64_t chain = residue(rng);
    uint64_t want = chain;
    for (int i = 1; i < kFactors; ++i) {
      const uint64_t factor = residue(rng);
      chain = m.MultiplyLazy(chain, factor);
      want = TimesModulo(want, factor, p);
    }
    uint64_t got = m.Reduce(chain);
    for (int i = 1; i < kFactors; ++i) got = TimesModulo(got, m.r_mod_p(), p);
    EXPECT_EQ(got, want) << p;
  }
}

}  // namespace
}  // namespace matrixd::cpu
