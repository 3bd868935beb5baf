// Montgomery multiplication modulo an odd p < 2^62 with R = 2^64: products mod p from three
// 64-bit multiplications instead of a 128-by-64-bit division, for long chains of modular products.
#ifndef MATRIXD_CORE_CPU_MONTGOMERY_H_
#define MATRIXD_CORE_CPU_MONTGOMERY_H_

#include <cstdint>

namespace matrixd::cpu {

class MontgomeryModulus {
 public:
  // REQUIRES: p odd, 3 <= p < 2^62.
  explicit MontgomeryModulus(uint64_t p) : p_(p) {
    // Newton's iteration for p^-1 mod 2^64: p * p = 1 mod 8 gives 3 correct bits, and each step
    // doubles them (3, 6, 12, 24, 48, 96).
    uint64_t inverse = p;
    for (int i = 0; i < 5; ++i) inverse *= 2 - p * inverse;
    neg_inverse_ = -inverse;
    r_mod_p_ = static_cast<uint64_t>((Uint128{1} << 64) % p);
  }

  uint64_t modulus() const { return p_; }
  // R mod p: the product of k factors by Multiply carries a factor R^-(k-1), undone by
  // multiplying with this power.
  uint64_t r_mod_p() const { return r_mod_p_; }

  // a b R^-1 mod p, in [0, p). REQUIRES: a, b < p.
  uint64_t Multiply(uint64_t a, uint64_t b) const { return Reduce(MultiplyLazy(a, b)); }

  // A value in [0, 2p) congruent to a b R^-1 mod p, one comparison cheaper than Multiply, for
  // chains of products. REQUIRES: a, b < 2p.
  uint64_t MultiplyLazy(uint64_t a, uint64_t b) const {
    const Uint128 t = static_cast<Uint128>(a) * b;
    const uint64_t m = static_cast<uint64_t>(t) * neg_inverse_;
    // t + m p is divisible by 2^64 and below 2^127 (t < 4p^2 < 2^126, m p < 2^126); the quotient
    // is below (4p^2 + 2^64 p) / 2^64 < 2p since 4p < 2^64.
    return static_cast<uint64_t>((t + static_cast<Uint128>(m) * p_) >> 64);
  }

  // x mod p. REQUIRES: x < 2p.
  uint64_t Reduce(uint64_t x) const { return x >= p_ ? x - p_ : x; }

 private:
  __extension__ typedef unsigned __int128 Uint128;

  uint64_t p_;
  uint64_t neg_inverse_;  // -p^-1 mod 2^64
  uint64_t r_mod_p_;
};

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_MONTGOMERY_H_
