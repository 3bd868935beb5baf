#include "core/modular_arithmetic.h"

#include <initializer_list>

namespace matrixd {
namespace {

// Below 2^32 a product of two residues fits in 64 bits: a 64-bit remainder instead of the
// 128-bit one (__umodti3, a library call) is several times faster, which matters where many
// small primes are drawn and inverted (the GPU's exact determinant: ~1000 primes of 24 bits).
constexpr uint64_t kWordProductLimit = uint64_t{1} << 32;

template <typename Multiply>
uint64_t PowModWith(uint64_t base, uint64_t exponent, uint64_t p, Multiply multiply) {
  uint64_t result = 1 % p;
  base %= p;
  while (exponent > 0) {
    if (exponent & 1) result = multiply(result, base);
    base = multiply(base, base);
    exponent >>= 1;
  }
  return result;
}

// Miller-Rabin on odd n > 37 with the given bases and product.
template <typename Multiply>
bool StrongProbablePrime(uint64_t n, std::initializer_list<uint64_t> bases, Multiply multiply) {
  uint64_t d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  for (const uint64_t a : bases) {
    uint64_t x = PowModWith(a, d, n, multiply);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int r = 1; r < s; ++r) {
      x = multiply(x, x);
      if (x == n - 1) {
        composite = false;
        break;
      }
    }
    if (composite) return false;
  }
  return true;
}

}  // namespace

uint64_t PowMod(uint64_t base, uint64_t exponent, uint64_t p) {
  if (p < kWordProductLimit) {
    return PowModWith(base, exponent, p, [p](uint64_t x, uint64_t y) { return x * y % p; });
  }
  return PowModWith(base, exponent, p, [p](uint64_t x, uint64_t y) { return MulMod(x, y, p); });
}

uint64_t InvMod(uint64_t a, uint64_t p) { return PowMod(a, p - 2, p); }

bool IsPrime(uint64_t n) {
  if (n < 2) return false;
  for (uint64_t small : {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37}) {
    if (n % small == 0) return n == small;
  }
  if (n < 37 * 37) return true;
  if (n < kWordProductLimit) {
    // Bases 2, 7, 61 decide primality for every n < 4759123141 (Jaeschke 1993).
    return StrongProbablePrime(n, {2, 7, 61}, [n](uint64_t x, uint64_t y) { return x * y % n; });
  }
  // These bases decide primality for every n < 2^64.
  return StrongProbablePrime(n, {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37},
                             [n](uint64_t x, uint64_t y) { return MulMod(x, y, n); });
}

}  // namespace matrixd
