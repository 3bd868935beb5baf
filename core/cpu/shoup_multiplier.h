// Multiplication by a fixed residue w modulo p < 2^62 with Shoup's precomputed quotient
// w' = floor(w 2^64 / p): one high and two low 64-bit products and no division, for the inner loops
// of elimination and condensation where one factor stays fixed along a whole row or column.
#ifndef MATRIXD_CORE_CPU_SHOUP_MULTIPLIER_H_
#define MATRIXD_CORE_CPU_SHOUP_MULTIPLIER_H_

#include <cstdint>

namespace matrixd::cpu {

class ShoupMultiplier {
 public:
  // REQUIRES: 2 <= p < 2^62, w < p.
  ShoupMultiplier(uint64_t w, uint64_t p)
      : w_(w), w_quotient_(static_cast<uint64_t>((static_cast<Uint128>(w) << 64) / p)), p_(p) {}

  // x w mod p, in [0, p). REQUIRES: x < p.
  uint64_t Times(uint64_t x) const {
    const uint64_t q = static_cast<uint64_t>((static_cast<Uint128>(x) * w_quotient_) >> 64);
    // q is floor(x w / p) or one less, so the wrapped difference is the true x w - q p in [0, 2p).
    const uint64_t r = x * w_ - q * p_;
    return r >= p_ ? r - p_ : r;
  }

 private:
  __extension__ typedef unsigned __int128 Uint128;

  uint64_t w_;
  uint64_t w_quotient_;
  uint64_t p_;
};

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_SHOUP_MULTIPLIER_H_
