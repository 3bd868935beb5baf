// ShoupMultiplier (core/cpu/shoup_multiplier.h) against 128-bit products reduced by division.
#include "core/cpu/shoup_multiplier.h"

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

// From the smallest modulus allowed to the largest prime below 2^62; Shoup's method needs no
// primality, so an even composite too.
const std::vector<uint64_t>& Moduli() {
  static const std::vector<uint64_t> moduli = {
      2, 3, 1000000, 4294967291, (uint64_t{1} << 61) - 1, (uint64_t{1} << 62) - 57};
  return moduli;
}

TEST(ShoupMultiplier, TimesIsTheProductModP) {
  std::mt19937_64 rng(1);
  for (const uint64_t p : Moduli()) {
    std::uniform_int_distribution<uint64_t> residue(0, p - 1);
    for (int i = 0; i < 200; ++i) {
      const uint64_t w = residue(rng);
      const ShoupMultiplier times(w, p);
      for (int j = 0; j < 20; ++j) {
        const uint64_t x = residue(rng);
        ASSERT_EQ(times.Times(x), TimesModulo(x, w, p)) << x << " * " << w << " mod " << p;
      }
    }
  }
}

TEST(ShoupMultiplier, LargestResiduesGiveOne) {
  for (const uint64_t p : Moduli()) {
    EXPECT_EQ(ShoupMultiplier(p - 1, p).Times(p - 1), 1 % p) << p;  // (-1)(-1)
  }
}

TEST(ShoupMultiplier, ByZeroIsZero) {
  for (const uint64_t p : Moduli()) {
    const ShoupMultiplier times(0, p);
    EXPECT_EQ(times.Times(0), 0u);
    EXPECT_EQ(times.Times(p - 1), 0u);
  }
}

TEST(ShoupMultiplier, ByOneIsTheIdentity) {
  for (const uint64_t p : Moduli()) {
    if (p == 2) continue;  // w = 1 is p - 1 there, covered above
    const ShoupMultiplier times(1, p);
    for (const uint64_t x : {uint64_t{0}, uint64_t{1}, p / 2, p - 1}) EXPECT_EQ(times.Times(x), x);
  }
}

// Where the precomputed quotient is one short, the correction step must still land in [0, p):
// every x against w = p - 1 and w = p / 2 at the largest prime.
TEST(ShoupMultiplier, ResultIsAlwaysReducedBelowP) {
  const uint64_t p = (uint64_t{1} << 62) - 57;
  for (const uint64_t w : {p - 1, p / 2, p / 2 + 1}) {
    const ShoupMultiplier times(w, p);
    for (uint64_t x = p - 1; x > p - 5000; --x) ASSERT_EQ(times.Times(x), TimesModulo(x, w, p));
  }
}

}  // namespace
}  // namespace matrixd::cpu
