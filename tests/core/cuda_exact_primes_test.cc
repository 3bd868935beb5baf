// ExactPrimes (core/cuda/exact_primes.h): the primes drawn ahead on a thread and those drawn on
// demand after them are one sequence of distinct primes of the exact determinant's range, counted
// as they are taken. Needs no device (plain host code of the CUDA backend).
#include <cstdint>
#include <set>

#include "core/cuda/exact_determinant.h"
#include "core/cuda/exact_primes.h"
#include "core/modular_arithmetic.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

// Takes `count` primes from `primes`, expecting each a prime of [kExactPrimeLow, kExactPrimeHigh)
// not seen before (in `seen`), and taken() to count them.
void TakeDistinctPrimes(ExactPrimes& primes, int count, std::set<uint64_t>& seen) {
  for (int i = 0; i < count; ++i) {
    const size_t before = primes.taken();
    const uint64_t p = primes.Next();
    EXPECT_EQ(primes.taken(), before + 1);
    EXPECT_GE(p, kExactPrimeLow);
    EXPECT_LT(p, kExactPrimeHigh);
    EXPECT_TRUE(IsPrime(p)) << p;
    EXPECT_TRUE(seen.insert(p).second) << p << " drawn twice";
  }
}

TEST(ExactPrimesTest, DrawnAheadThenOnDemandAreDistinctPrimesOfTheRange) {
  ExactPrimes primes(200);
  std::set<uint64_t> seen;
  TakeDistinctPrimes(primes, 200, seen);  // those drawn ahead
  TakeDistinctPrimes(primes, 100, seen);  // then on demand, from the same source
  EXPECT_EQ(primes.taken(), 300u);
}

TEST(ExactPrimesTest, NoneAheadDrawsEveryPrimeOnDemand) {
  ExactPrimes primes(0);
  std::set<uint64_t> seen;
  EXPECT_EQ(primes.taken(), 0u);
  TakeDistinctPrimes(primes, 50, seen);
}

TEST(ExactPrimesTest, DestroyedUntouchedWhileDrawingJoinsItsThread) {
  // Destroyed at once, its thread still drawing: the destructor waits for it (no crash, no leak).
  for (int i = 0; i < 4; ++i) ExactPrimes primes(2000);
}

TEST(ExactPrimesTest, TwoDrawsAreDifferentSequences) {
  ExactPrimes first(20);
  ExactPrimes second(20);
  std::set<uint64_t> a;
  std::set<uint64_t> b;
  for (int i = 0; i < 20; ++i) {
    a.insert(first.Next());
    b.insert(second.Next());
  }
  EXPECT_NE(
      a,
      b);  // each seeded from std::random_device: the same set with probability ~1 / C(513708, 20)
}

}  // namespace
}  // namespace matrixd::cuda
