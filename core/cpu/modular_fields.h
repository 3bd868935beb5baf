// The two representations of Z/p that the blocked modular LU computes in: residues as float64 in
// balanced form for small primes, so that the trailing updates are BLAS dgemm calls with delayed
// reduction; and uint64 residues in [0, p) for every prime below 2^62.
#ifndef MATRIXD_CORE_CPU_MODULAR_FIELDS_H_
#define MATRIXD_CORE_CPU_MODULAR_FIELDS_H_

#include <algorithm>
#include <cstdint>

#include "core/cpu/shoup_multiplier.h"
#include "core/modular_arithmetic.h"

namespace matrixd::cpu {

// Primes below this take the float64 representation: at least 7 products of balanced residues fit
// in one exact float64 sum between reductions (31 below 2^25, millions at 65521). Even 7 terms per
// dgemm call beat the uint64 path (0.09 s against 0.16 s at n = 1024 on two Zen 4 cores).
inline constexpr uint64_t kBalancedDoubleModulusLimit = uint64_t{1} << 26;

// Z/p as float64 residues r with |r| <= p / 2: every integer below 2^53 is exact, and a product
// of two balanced residues is below 2^50.
// REQUIRES (constructor): p prime, p < kBalancedDoubleModulusLimit.
class BalancedDoubleField {
 public:
  using Value = double;

  explicit BalancedDoubleField(uint64_t p)
      : modulus_(p),
        p_(static_cast<double>(p)),
        inverse_p_(1.0 / static_cast<double>(p)),
        half_(static_cast<double>(p / 2)),
        terms_(static_cast<int64_t>((SumBound(p) - half_) / (half_ * half_))) {}

  uint64_t modulus() const { return modulus_; }
  // How many products of two residues a reduced value may take before it must be reduced again.
  int64_t terms() const { return terms_; }

  // REQUIRES: r < p.
  double FromResidue(uint64_t r) const {
    const double x = static_cast<double>(r);
    return x > half_ ? x - p_ : x;
  }
  uint64_t ToResidue(double r) const { return static_cast<uint64_t>(r < 0 ? r + p_ : r); }
  bool IsZero(double r) const { return r == 0.0; }
  double Multiply(double a, double b) const { return Reduce(a * b); }
  double Inverse(double a) const { return FromResidue(InvMod(ToResidue(a), modulus_)); }
  // dst[j] -= factor * src[j] for j in [0, count).
  void SubtractMultiple(double factor, const double* src, double* dst, int64_t count) const {
    for (int64_t j = 0; j < count; ++j) dst[j] = Reduce(dst[j] - factor * src[j]);
  }

  // The balanced residue of an integer-valued x. REQUIRES: |x| <= SumBound(p).
  double Reduce(double x) const {
    // Adding and subtracting 1.5 * 2^52 rounds to the nearest integer without SSE4.1's roundsd;
    // the quotient may be one off near a half, which the two tests put right.
    constexpr double kRound = 6755399441055744.0;
    const double q = (x * inverse_p_ + kRound) - kRound;
    double r = x - q * p_;  // exact: |q p| <= |x| + 1.5 p < 2^53
    if (r > half_) r -= p_;
    if (r < -half_) r += p_;
    return r;
  }

 private:
  // The largest magnitude a sum may reach: below 2^53 with room for Reduce's q p, and with
  // x / p <= 2^50 so that the rounding trick applies.
  static double SumBound(uint64_t p) {
    const double x = static_cast<double>(p);
    return std::min(9007199254740992.0 - 2.0 * x, 1125899906842624.0 * x);
  }

  uint64_t modulus_;
  double p_;
  double inverse_p_;
  double half_;
  int64_t terms_;
};

// Z/p as uint64 residues in [0, p), products in 128 bits.
// REQUIRES (constructor): p prime, 2 <= p < 2^62.
class Uint64Field {
 public:
  using Value = uint64_t;

  explicit Uint64Field(uint64_t p) : p_(p) {}

  uint64_t modulus() const { return p_; }
  uint64_t FromResidue(uint64_t r) const { return r; }
  uint64_t ToResidue(uint64_t r) const { return r; }
  bool IsZero(uint64_t r) const { return r == 0; }
  uint64_t Multiply(uint64_t a, uint64_t b) const { return MulMod(a, b, p_); }
  uint64_t Inverse(uint64_t a) const { return InvMod(a, p_); }
  // dst[j] -= factor * src[j] for j in [0, count): the factor is fixed along the row, so Shoup's
  // method replaces the 128-bit division of every product.
  void SubtractMultiple(uint64_t factor, const uint64_t* src, uint64_t* dst, int64_t count) const {
    const ShoupMultiplier times(factor, p_);
    for (int64_t j = 0; j < count; ++j) dst[j] = SubMod(dst[j], times.Times(src[j]), p_);
  }

 private:
  uint64_t p_;
};

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_MODULAR_FIELDS_H_
