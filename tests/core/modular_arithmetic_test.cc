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
