#include "core/modular_arithmetic.h"

#include <initializer_list>

namespace matrixd {

uint64_t PowMod(uint64_t base, uint64_t exponent, uint64_t p) {
  uint64_t result = 1 % p;
  base %= p;
  while (exponent > 0) {
    if (exponent & 1) result = MulMod(result, base, p);
    base = MulMod(base, base, p);
    exponent >>= 1;
  }
  return result;
}

uint64_t InvMod(uint64_t a, uint64_t p) { return PowMod(a, p - 2, p); }

bool IsPrime(uint64_t n) {
  if (n < 2) return false;
  for (uint64_t small : {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37}) {
    if (n % small == 0) return n == small;
  }
  uint64_t d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  // These bases decide primality for every n < 2^64.
  for (uint64_t a : {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37}) {
    uint64_t x = PowMod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int r = 1; r < s; ++r) {
      x = MulMod(x, x, n);
      if (x == n - 1) {
        composite = false;
        break;
      }
    }
    if (composite) return false;
  }
  return true;
}

}  // namespace matrixd
