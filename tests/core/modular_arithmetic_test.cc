#include "core/modular_arithmetic.h"

#include <vector>

#include "gtest/gtest.h"

namespace matrixd {
namespace {

TEST(ModularArithmetic, IsPrimeAgreesWithTrialDivisionBelowTenThousand) {
  for (uint64_t n = 0; n < 10000; ++n) {
    bool prime = n >= 2;
    for (uint64_t d = 2; d * d <= n; ++d) {
      if (n % d == 0) prime = false;
    }
    EXPECT_EQ(IsPrime(n), prime) << n;
  }
}

TEST(ModularArithmetic, IsPrimeOnLargeKnownValues) {
  EXPECT_TRUE(IsPrime(4611686018427387847ULL));   // largest prime below 2^62
  EXPECT_TRUE(IsPrime(2305843009213693951ULL));   // Mersenne 2^61 - 1
  EXPECT_FALSE(IsPrime(4611686018427387903ULL));  // 2^62 - 1 = 3 * 715827883 * 2147483647
  EXPECT_FALSE(IsPrime(3215031751ULL));           // strong pseudoprime to bases 2, 3, 5, 7
}

TEST(ModularArithmetic, IsPrimeAgreesWithASieveAmongTheGpusPrimes) {
  // [2^23, 2^23 + 2^18): the 32-bit path (bases 2, 7, 61) on the range the GPU draws from.
  const uint64_t low = uint64_t{1} << 23;
  const uint64_t length = uint64_t{1} << 18;
  std::vector<bool> composite(length, false);
  for (uint64_t d = 2; d * d < low + length; ++d) {
    for (uint64_t m = (low + d - 1) / d * d; m < low + length; m += d) composite[m - low] = true;
  }
  for (uint64_t i = 0; i < length; ++i) EXPECT_EQ(IsPrime(low + i), !composite[i]) << low + i;
}

TEST(ModularArithmetic, IsPrimeRejectsStrongPseudoprimesBelowTwoToThe32) {
  // Strong pseudoprimes to base 2 (2047, 3277, 4033, 4681, 8321), to bases 2, 3, 5 (25326001), to
  // 2, 3, 5, 7 (3215031751), and 2^32 - 1, 2^32 + 1 = 641 * 6700417 at the paths' border.
  for (const uint64_t n : {2047ULL, 3277ULL, 4033ULL, 4681ULL, 8321ULL, 25326001ULL, 3215031751ULL,
                           4294967295ULL, 4294967297ULL}) {
    EXPECT_FALSE(IsPrime(n)) << n;
  }
  EXPECT_TRUE(IsPrime(4294967291ULL));  // largest prime below 2^32
  EXPECT_TRUE(IsPrime(4294967311ULL));  // smallest above
  EXPECT_TRUE(IsPrime(16777213ULL));    // largest below 2^24
}

TEST(ModularArithmetic, PowModAgreesAcrossTheTwoToThe32Border) {
  // The 64-bit product path below 2^32 against repeated 128-bit MulMod.
  for (const uint64_t p : {16777213ULL, 4294967291ULL, 4294967311ULL}) {
    uint64_t expected = 1;
    for (uint64_t e = 0; e < 300; ++e) {
      EXPECT_EQ(PowMod(123456789, e, p), expected) << p << "^" << e;
      expected = MulMod(expected, 123456789 % p, p);
    }
    EXPECT_EQ(MulMod(InvMod(65537, p), 65537, p), 1u);
  }
}

TEST(ModularArithmetic, InverseTimesValueIsOne) {
  const uint64_t p = 4611686018427387847ULL;
  for (const uint64_t a : std::vector<uint64_t>{1, 2, 12345678901234, p - 1}) {
    EXPECT_EQ(MulMod(a, InvMod(a, p), p), 1u) << a;
  }
}

TEST(ModularArithmetic, ReduceSignedGivesCanonicalResidue) {
  EXPECT_EQ(ReduceSigned(-1, 7), 6u);
  EXPECT_EQ(ReduceSigned(-14, 7), 0u);
  EXPECT_EQ(ReduceSigned(INT64_MIN, 1000003),
            static_cast<uint64_t>((INT64_MIN % 1000003) + 1000003));
}

}  // namespace
}  // namespace matrixd
