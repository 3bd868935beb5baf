// The two representations of Z/p that the blocked modular LU computes in: residues as float64 in
// balanced form for primes below 2^32, so that the trailing updates are BLAS dgemm calls with
// delayed reduction; and uint64 residues in [0, p) for every prime below 2^62.
#ifndef MATRIXD_CORE_CPU_MODULAR_FIELDS_H_
#define MATRIXD_CORE_CPU_MODULAR_FIELDS_H_

#include <algorithm>
#include <cstdint>

#include "core/cpu/shoup_multiplier.h"
#include "core/modular_arithmetic.h"

namespace matrixd::cpu {

// Primes below this take the float64 representation: split products stay below 2^46 up to here,
// and even then beat the uint64 path by half (0.55 s against 0.95 s at n = 2048 on two Zen 4
// cores, either side of 2^32).
inline constexpr uint64_t kBalancedDoubleModulusLimit = uint64_t{1} << 32;
// From this prime up the float64 products split their right operand (BalancedDoubleField::split).
// Below it products of whole balanced residues (< 2^48) leave room for 31 terms or more between
// reductions, and one dgemm beat the two of a split product (n = 2048, two Zen 4 cores: 0.31 s
// against 0.45 s just below 2^25); just below 2^26 only 7 terms fit and the split won (0.44 s
// against 0.72 s).
inline constexpr uint64_t kSplitOperandModulus = uint64_t{1} << 25;

// The integer nearest to x. REQUIRES: |x| <= 2^51.
inline double NearestInteger(double x) {
  // Adding and subtracting 1.5 * 2^52 rounds to the nearest integer without SSE4.1's roundsd.
  constexpr double kRound = 6755399441055744.0;
  return (x + kRound) - kRound;
}

// Z/p as float64 residues r with |r| <= p / 2, where every integer below 2^53 is exact. Below
// kSplitOperandModulus a product of two residues is below 2^48; above it a product's right
// operand is split as 2^16 hi + lo with |hi|, |lo| <= 2^15, so that each partial product is below
// 2^46.
// REQUIRES (constructor): p prime, p < kBalancedDoubleModulusLimit.
class BalancedDoubleField {
 public:
  using Value = double;
  static constexpr double kSplitBase = 65536.0;

  explicit BalancedDoubleField(uint64_t p)
      : modulus_(p),
        p_(static_cast<double>(p)),
        inverse_p_(1.0 / static_cast<double>(p)),
        half_(static_cast<double>(p / 2)),
        split_(p >= kSplitOperandModulus),
        terms_(static_cast<int64_t>((SumBound(p) - half_) /
                                    (half_ * (split_ ? kSplitBase / 2 : half_)))) {}

  uint64_t modulus() const { return modulus_; }
  // Whether products split their right operand in two.
  bool split() const { return split_; }
  // How many products of a residue and a (split) residue a reduced value may take before it must
  // be reduced again.
  int64_t terms() const { return terms_; }

  // REQUIRES: r < p.
  double FromResidue(uint64_t r) const {
    const double x = static_cast<double>(r);
    return x > half_ ? x - p_ : x;
  }
  uint64_t ToResidue(double r) const { return static_cast<uint64_t>(r < 0 ? r + p_ : r); }
  bool IsZero(double r) const { return r == 0.0; }
  double Multiply(double a, double b) const { return split_ ? MultiplyWide(a, b) : Reduce(a * b); }
  double Inverse(double a) const { return FromResidue(InvMod(ToResidue(a), modulus_)); }
  // dst[j] -= factor * src[j] for j in [0, count).
  void SubtractMultiple(double factor, const double* src, double* dst, int64_t count) const {
    if (split_) {
      for (int64_t j = 0; j < count; ++j) dst[j] = Reduce(dst[j] - MultiplyWide(factor, src[j]));
      return;
    }
    for (int64_t j = 0; j < count; ++j) dst[j] = Reduce(dst[j] - factor * src[j]);
  }

  // The balanced residue of an integer-valued x. REQUIRES: |x| <= SumBound(p).
  double Reduce(double x) const {
    // The quotient may be one off near a half, which Balanced puts right.
    const double q = NearestInteger(x * inverse_p_);
    return Balanced(x - q * p_);  // exact: |q p| <= |x| + 1.5 p < 2^53
  }

 private:
  // The largest magnitude a sum may reach: below 2^53 with room for Reduce's q p, and with
  // x / p <= 2^50 for NearestInteger.
  static double SumBound(uint64_t p) {
    const double x = static_cast<double>(p);
    return std::min(9007199254740992.0 - 2.0 * x, 1125899906842624.0 * x);
  }

  // r in [-half, half]. REQUIRES: |r| <= 1.5 p.
  double Balanced(double r) const {
    if (r > half_) r -= p_;
    if (r < -half_) r += p_;
    return r;
  }

  // a b for products up to 2^62: the quotient from the rounded float64 product (one off at most),
  // the remainder in exact int64 arithmetic.
  double MultiplyWide(double a, double b) const {
    const double q = NearestInteger(a * b * inverse_p_);
    const int64_t r = static_cast<int64_t>(a) * static_cast<int64_t>(b) -
                      static_cast<int64_t>(q) * static_cast<int64_t>(modulus_);
    return Balanced(static_cast<double>(r));
  }

  uint64_t modulus_;
  double p_;
  double inverse_p_;
  double half_;
  bool split_;
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
