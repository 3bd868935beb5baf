// Arithmetic in Z/p for word-size moduli p < 2^62, with 128-bit products.
#ifndef MATRIXD_CORE_MODULAR_ARITHMETIC_H_
#define MATRIXD_CORE_MODULAR_ARITHMETIC_H_

#include <cstdint>

namespace matrixd {

// Largest modulus accepted anywhere (exclusive): 2^62.
inline constexpr uint64_t kModulusLimit = uint64_t{1} << 62;

// REQUIRES: a, b < p.
inline uint64_t AddMod(uint64_t a, uint64_t b, uint64_t p) {
  const uint64_t s = a + b;  // < 2^63: no wrap for p < 2^62
  return s >= p ? s - p : s;
}
inline uint64_t SubMod(uint64_t a, uint64_t b, uint64_t p) { return a >= b ? a - b : a + p - b; }
inline uint64_t MulMod(uint64_t a, uint64_t b, uint64_t p) {
  return __extension__ static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b % p);
}
// The canonical residue of a signed value.
inline uint64_t ReduceSigned(int64_t v, uint64_t p) {
  const int64_t r = static_cast<int64_t>(v % static_cast<int64_t>(p));
  return static_cast<uint64_t>(r < 0 ? r + static_cast<int64_t>(p) : r);
}
uint64_t PowMod(uint64_t base, uint64_t exponent, uint64_t p);
// REQUIRES: p prime, a != 0 mod p.
uint64_t InvMod(uint64_t a, uint64_t p);
// Deterministic Miller-Rabin for all 64-bit n.
bool IsPrime(uint64_t n);

}  // namespace matrixd

#endif  // MATRIXD_CORE_MODULAR_ARITHMETIC_H_
