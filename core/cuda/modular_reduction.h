// Arithmetic modulo a word-size prime p < 2^62 that compiles for the host and for CUDA devices
// alike, so that the device code's reduction logic is unit-tested on the host against 128-bit
// integer arithmetic. Barrett reduction (HAC 14.42 with base 2): GPUs have no 128-bit division,
// and Barrett also works for p = 2, which Montgomery's method does not. Plain header: no CUDA
// header needed; under nvcc the functions are __host__ __device__.
#ifndef MATRIXD_CORE_CUDA_MODULAR_REDUCTION_H_
#define MATRIXD_CORE_CUDA_MODULAR_REDUCTION_H_

#include <cstdint>

#if defined(__CUDACC__)
#define MATRIXD_HOST_DEVICE __host__ __device__
#else
#define MATRIXD_HOST_DEVICE
#endif

namespace matrixd::cuda {

__extension__ typedef unsigned __int128 HostUint128;

// The high 64 bits of a * b.
MATRIXD_HOST_DEVICE inline uint64_t MulHigh64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<HostUint128>(a) * b) >> 64);
#endif
}

// An unsigned 192-bit sum hi * 2^128 + mid * 2^64 + lo of 128-bit products.
struct Wide192 {
  uint64_t lo = 0;
  uint64_t mid = 0;
  uint64_t hi = 0;
};

// acc += a * b. Three instructions on the device (PTX multiply-add with carry chain), so a dot
// product of residues costs one 64x64->128-bit product per term and one reduction at the end.
MATRIXD_HOST_DEVICE inline void MultiplyAccumulate(uint64_t a, uint64_t b, Wide192& acc) {
#if defined(__CUDA_ARCH__)
  asm("mad.lo.cc.u64 %0, %3, %4, %0;\n\t"
      "madc.hi.cc.u64 %1, %3, %4, %1;\n\t"
      "addc.u64 %2, %2, 0;"
      : "+l"(acc.lo), "+l"(acc.mid), "+l"(acc.hi)
      : "l"(a), "l"(b));
#else
  const uint64_t low = a * b;
  const uint64_t high = MulHigh64(a, b);
  acc.lo += low;
  const uint64_t carry_low = acc.lo < low ? 1 : 0;
  acc.mid += high;
  uint64_t carry_mid = acc.mid < high ? 1 : 0;
  acc.mid += carry_low;
  carry_mid += acc.mid < carry_low ? 1 : 0;
  acc.hi += carry_mid;
#endif
}

// p with its Barrett constant. With L the bit length of p (2^(L-1) <= p < 2^L, L <= 62) and
// mu = floor(2^(2L) / p) < 2^63, a value x < 2^(2L) has quotient estimate
// q = floor(floor(x / 2^(L-1)) * mu / 2^(L+1)) with floor(x / p) - 2 <= q <= floor(x / p), so two
// conditional subtractions finish the reduction.
class BarrettModulus {
 public:
  BarrettModulus() = default;
  // REQUIRES: 2 <= p < 2^62. Host only.
  static BarrettModulus Of(uint64_t p) {
    BarrettModulus m;
    m.p_ = p;
    m.bits_ = 64 - __builtin_clzll(p);
    m.mu_ = static_cast<uint64_t>((HostUint128{1} << (2 * m.bits_)) / p);
    return m;
  }

  MATRIXD_HOST_DEVICE uint64_t modulus() const { return p_; }

  // (hi * 2^64 + lo) mod p. REQUIRES: the value < 2^(2L); a product of two residues is.
  MATRIXD_HOST_DEVICE uint64_t Reduce(uint64_t hi, uint64_t lo) const {
    const int shift = bits_ - 1;  // 1..61
    const uint64_t x1 = (hi << (64 - shift)) | (lo >> shift);
    const uint64_t product_lo = x1 * mu_;
    const uint64_t product_hi = MulHigh64(x1, mu_);
    const uint64_t q = (product_hi << (63 - bits_)) | (product_lo >> (bits_ + 1));
    uint64_t r = lo - q * p_;  // the true remainder is below 3p < 2^64: the low word is exact
    if (r >= p_) r -= p_;
    if (r >= p_) r -= p_;
    return r;
  }

  // REQUIRES: a, b < p.
  MATRIXD_HOST_DEVICE uint64_t Mul(uint64_t a, uint64_t b) const {
    return Reduce(MulHigh64(a, b), a * b);
  }
  MATRIXD_HOST_DEVICE uint64_t Add(uint64_t a, uint64_t b) const {
    const uint64_t s = a + b;  // < 2^63
    return s >= p_ ? s - p_ : s;
  }
  MATRIXD_HOST_DEVICE uint64_t Sub(uint64_t a, uint64_t b) const {
    return a >= b ? a - b : a + (p_ - b);
  }
  MATRIXD_HOST_DEVICE uint64_t Negate(uint64_t a) const { return a == 0 ? 0 : p_ - a; }

  // (r * 2^64 + w) mod p. REQUIRES: r < p. Shifts w in L-1 bits at a time, so that each
  // intermediate r * 2^(L-1) + digit < 2^(2L-1) is a valid Reduce input.
  MATRIXD_HOST_DEVICE uint64_t ShiftIn(uint64_t r, uint64_t w) const {
    const int chunk = bits_ - 1;
    int remaining = 64;
    while (remaining > 0) {
      const int c = remaining < chunk ? remaining : chunk;
      remaining -= c;
      const uint64_t digit = (w >> remaining) & ((uint64_t{1} << c) - 1);
      r = Reduce(r >> (64 - c), (r << c) | digit);
    }
    return r;
  }

  // acc mod p. REQUIRES: acc.hi < p, which holds for any sum of fewer than 2^64 products of two
  // residues (such a sum is below p * 2^128).
  MATRIXD_HOST_DEVICE uint64_t Reduce(const Wide192& acc) const {
    return ShiftIn(ShiftIn(acc.hi, acc.mid), acc.lo);
  }

  // a^-1 mod p by the extended Euclidean algorithm. REQUIRES: p prime, 0 < a < p.
  MATRIXD_HOST_DEVICE uint64_t Inverse(uint64_t a) const {
    // Invariants: r0 = s0 * a, r1 = s1 * a (mod p); |s| < p < 2^62 fits int64.
    int64_t s0 = 0;
    int64_t s1 = 1;
    uint64_t r0 = p_;
    uint64_t r1 = a;
    while (r1 != 0) {
      const uint64_t q = r0 / r1;
      const uint64_t r2 = r0 - q * r1;
      const int64_t s2 = s0 - static_cast<int64_t>(q) * s1;
      r0 = r1;
      r1 = r2;
      s0 = s1;
      s1 = s2;
    }
    return s0 < 0 ? static_cast<uint64_t>(s0 + static_cast<int64_t>(p_))
                  : static_cast<uint64_t>(s0);
  }

  // The canonical residue of v in [0, p).
  MATRIXD_HOST_DEVICE uint64_t FromSigned(int64_t v) const {
    const int64_t r = v % static_cast<int64_t>(p_);
    return static_cast<uint64_t>(r < 0 ? r + static_cast<int64_t>(p_) : r);
  }

 private:
  uint64_t p_ = 0;
  uint64_t mu_ = 0;
  int bits_ = 0;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_MODULAR_REDUCTION_H_
