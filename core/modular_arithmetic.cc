#include "core/modular_arithmetic.h"

#include <initializer_list>

namespace matrixd {
namespace {

// Below 2^32 a product of two residues fits in 64 bits: a 64-bit remainder instead of the
// 128-bit one (__umodti3, a library call) is several times faster, which matters where many
// small primes are drawn and inverted (the GPU's exact determinant: ~1000 primes of 24 bits).
constexpr uint64_t kWordProductLimit = uint64_t{1} << 32;

// Arithmetic mod an odd n < 2^32 in Montgomery form x R mod n, R = 2^32 (Montgomery 1985): a
// product is three multiplications and no division, which makes the primality test of a 24-bit
// number several times faster than with `%` (the GPU's exact determinant draws ~16 000 candidates
// for its ~1000 primes). The reduction is the signed variant: t - m n with m = t n^-1 mod R has
// zero low half, so the high halves' difference is t / R mod n, with no 65-bit sum.
class Montgomery32 {
 public:
  explicit Montgomery32(uint64_t n) : n_(n), inverse_(static_cast<uint32_t>(n)) {
    // Newton's iteration doubles the correct low bits of n^-1 mod 2^32: 3 (n n = 1 mod 8), 6, ...
    for (int i = 0; i < 4; ++i) inverse_ *= 2 - static_cast<uint32_t>(n) * inverse_;
  }
  uint64_t To(uint64_t x) const { return (x % n_ << 32) % n_; }
  uint64_t Multiply(uint64_t a, uint64_t b) const {
    const uint64_t t = a * b;
    const uint32_t m = static_cast<uint32_t>(t) * inverse_;
    const uint64_t high = t >> 32;
    const uint64_t subtract = (static_cast<uint64_t>(m) * n_) >> 32;
    return high >= subtract ? high - subtract : high + n_ - subtract;
  }

 private:
  uint64_t n_;
  uint32_t inverse_;
};

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

// Miller-Rabin on odd n > 37 with the given bases, in the representation `to` maps into (where
// `one` and `minus_one` stand for 1 and n - 1) with its product `multiply`.
template <typename To, typename Multiply>
bool StrongProbablePrime(uint64_t n, std::initializer_list<uint64_t> bases, uint64_t one,
                         uint64_t minus_one, To to, Multiply multiply) {
  uint64_t d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  for (const uint64_t a : bases) {
    uint64_t x = one;
    for (uint64_t power = to(a), e = d; e > 0; e >>= 1) {
      if (e & 1) x = multiply(x, power);
      power = multiply(power, power);
    }
    if (x == one || x == minus_one) continue;
    bool composite = true;
    for (int r = 1; r < s; ++r) {
      x = multiply(x, x);
      if (x == minus_one) {
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
    const Montgomery32 field(n);
    const uint64_t one = field.To(1);
    return StrongProbablePrime(
        n, {2, 7, 61}, one, n - one, [&field](uint64_t x) { return field.To(x); },
        [&field](uint64_t x, uint64_t y) { return field.Multiply(x, y); });
  }
  // These bases decide primality for every n < 2^64.
  return StrongProbablePrime(
      n, {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37}, 1, n - 1, [n](uint64_t x) { return x % n; },
      [n](uint64_t x, uint64_t y) { return MulMod(x, y, n); });
}

}  // namespace matrixd
