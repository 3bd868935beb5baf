// Arithmetic modulo a prime p < 2^32 on float64 residues in balanced form (|r| <= p / 2), the
// representation of the GPU's modular LU (core/cuda/modular_lu.h): every integer below 2^53 is
// exact in float64, so products of a residue and a 16-bit piece summed by DGEMM stay exact, and
// one product of two residues (< 2^62) is exact as its rounded value plus its FMA remainder.
// Compiles for the host and for CUDA devices alike (__host__ __device__ under nvcc), so the
// device's reduction logic is unit-tested on the host against 128-bit integer arithmetic.
#ifndef MATRIXD_CORE_CUDA_BALANCED_RESIDUE_H_
#define MATRIXD_CORE_CUDA_BALANCED_RESIDUE_H_

#include <cmath>
#include <cstdint>

#include "core/cuda/modular_reduction.h"  // MATRIXD_HOST_DEVICE

namespace matrixd::cuda {

// Primes below this take the float64 representation; larger ones take uint64 residues.
inline constexpr uint64_t kBalancedResidueLimit = uint64_t{1} << 32;
// A product's right operand splits as 2^16 hi + lo with |hi|, |lo| <= 2^15.
inline constexpr double kPieceBase = 65536.0;

class BalancedModulus {
 public:
  BalancedModulus() = default;
  // REQUIRES: 2 <= p < kBalancedResidueLimit. Host only.
  static BalancedModulus Of(uint64_t p) {
    BalancedModulus m;
    m.p_ = static_cast<double>(p);
    m.inverse_p_ = 1.0 / static_cast<double>(p);
    m.half_ = static_cast<double>(p / 2);
    m.modulus_ = p;
    return m;
  }

  MATRIXD_HOST_DEVICE uint64_t modulus() const { return modulus_; }
  MATRIXD_HOST_DEVICE double half() const { return half_; }

  // The balanced residue of an integer-valued x. REQUIRES: |x| <= 2^53 and |x| <= 2^50 p.
  MATRIXD_HOST_DEVICE double Reduce(double x) const {
    // The quotient may be one off (x / p is rounded), which the two corrections put right:
    // |x - q p| <= 1.5 p, and fma forms it exactly (an integer below 2^34).
    const double q = NearestInteger(x * inverse_p_);
    double r = fma(-q, p_, x);
    if (r > half_) r -= p_;
    if (r < -half_) r += p_;
    return r;
  }

  // a - b c mod p, balanced. REQUIRES: a, c balanced residues, |b| <= 2p.
  MATRIXD_HOST_DEVICE double MulSub(double a, double b, double c) const {
    // b c < 2^64 is h + l exactly: h rounded, l = fma's remainder (|l| <= 2^11, 0 below 2^53).
    const double h = b * c;
    const double l = fma(b, c, -h);
    const double q = NearestInteger(h * inverse_p_);
    const double r = fma(-q, p_, h);  // exact, |r| <= 1.5 p
    return Reduce((a - r) - l);       // |.| < 2^34: exact
  }
  // a b mod p, balanced. REQUIRES: |a| <= 2p, b a balanced residue.
  MATRIXD_HOST_DEVICE double Mul(double a, double b) const { return MulSub(0.0, -a, b); }

  // a b - c d mod p, balanced, with one final reduction: the two products reduce side by side
  // (half the dependent steps of Mul then MulSub). REQUIRES: a, c balanced residues, |b|, |d| <=
  // 2p (MulMinusMulLazy's results are fine).
  MATRIXD_HOST_DEVICE double MulMinusMul(double a, double b, double c, double d) const {
    return Reduce(MulMinusMulLazy(a, b, c, d));
  }

  // A value congruent to a b - c d mod p with |value| <= 2p, without the final reduction (8 of
  // its 23 float64 operations): the leaf's elimination keeps its entries so between steps.
  // REQUIRES: a, c balanced residues, |b|, |d| <= 2p.
  MATRIXD_HOST_DEVICE double MulMinusMulLazy(double a, double b, double c, double d) const {
    // |a b| <= p^2 < 2^64 is h + l exactly: h rounded, l = fma's remainder (|l| <= 2^11, and 0
    // when p < 2^26, where the products stay below 2^53). The quotients are nearest to within
    // 2^-18, so |r| <= 0.51 p, and |(r1 - r2) + (l1 - l2)| <= 1.02 p + 2^12 <= 2p for p >= 2^13.
    const double h1 = a * b;
    const double l1 = fma(a, b, -h1);
    const double h2 = c * d;
    const double l2 = fma(c, d, -h2);
    const double r1 = fma(-NearestInteger(h1 * inverse_p_), p_, h1);  // exact
    const double r2 = fma(-NearestInteger(h2 * inverse_p_), p_, h2);
    return (r1 - r2) + (l1 - l2);  // |.| < 2^35: exact
  }

  // a^-1 mod p (Fermat). REQUIRES: p prime, a != 0 mod p.
  MATRIXD_HOST_DEVICE double Inverse(double a) const {
    uint64_t e = modulus_ - 2;
    double result = 1.0;
    double base = a;
    while (e != 0) {
      if (e & 1) result = Mul(result, base);
      base = Mul(base, base);
      e >>= 1;
    }
    return Reduce(result);  // p = 2: a^0 = 1
  }

  // The balanced residue of any int64: by Reduce where |v| <= 2^50 (its precondition for every
  // p >= 2), without the 64-bit integer division that made the GPU's residues of an exact
  // determinant's entries compute-bound; by that division beyond.
  MATRIXD_HOST_DEVICE double FromSigned(int64_t v) const {
    constexpr int64_t kReducible = int64_t{1} << 50;
    if (v >= -kReducible && v <= kReducible) return Reduce(static_cast<double>(v));
    const int64_t r = v % static_cast<int64_t>(modulus_);  // |r| < p
    double x = static_cast<double>(r);
    if (x > half_) x -= p_;
    if (x < -half_) x += p_;
    return x;
  }
  // The canonical residue in [0, p). REQUIRES: r balanced.
  MATRIXD_HOST_DEVICE uint64_t ToCanonical(double r) const {
    return static_cast<uint64_t>(r < 0 ? r + p_ : r);
  }

  // The integer nearest to y. REQUIRES: |y| <= 2^51.
  MATRIXD_HOST_DEVICE static double NearestInteger(double y) {
    // Adding and subtracting 1.5 * 2^52 rounds to the nearest integer. Written with explicit
    // round-to-nearest additions on the device so the compiler cannot fuse or drop them.
    constexpr double kRound = 6755399441055744.0;
#if defined(__CUDA_ARCH__)
    return __dadd_rn(__dadd_rn(y, kRound), -kRound);
#else
    volatile double shifted = y + kRound;
    return shifted - kRound;
#endif
  }

 private:
  double p_ = 0.0;
  double inverse_p_ = 0.0;
  double half_ = 0.0;
  uint64_t modulus_ = 0;
};

// The pieces of a balanced residue b = kPieceBase * hi + lo, |hi|, |lo| <= 2^15 (b < 2^31).
MATRIXD_HOST_DEVICE inline double HighPiece(double b) {
  return BalancedModulus::NearestInteger(b * (1.0 / kPieceBase));
}
MATRIXD_HOST_DEVICE inline double LowPiece(double b, double high) { return b - kPieceBase * high; }

// How many pieces a trailing product C -= A B of inner dimension `depth` needs so that every
// partial sum is an exact integer below 2^53 (and C plus the sum too, for one piece): 1 when
// half + depth half^2 <= 2^53, else 2 (then depth * half * 2^15 < 2^53 needs depth <= 128 for
// p < 2^32). Host only.
inline int ProductPieces(uint64_t p, int64_t depth) {
  const double half = static_cast<double>(p / 2);
  return half + static_cast<double>(depth) * half * half <= 9007199254740992.0 ? 1 : 2;
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_BALANCED_RESIDUE_H_
