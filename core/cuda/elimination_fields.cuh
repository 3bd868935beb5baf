// The element arithmetic that the condensation and elimination kernels are written over, one small
// value type per field: float64 and complex128 (pivot closest to 1, the seed paper's section 4.1),
// and Z/p (first non-zero pivot, section 2.1) with residues either as uint64 (Barrett, any
// p < 2^62) or as float64 in the balanced range |r| <= p/2 (p < 2^26: exact products below 2^50,
// so sums of many products stay exact below 2^53 and need reducing only every few terms, as in
// FFLAS-FFPACK). Kernels see a field through:
//   Value; IsZero; PivotScore (smaller wins, ties go to the leftmost column); Negate; Mul;
//   MulSub(acc, a, b) = acc - a*b; Inverse;
//   Accumulator, Begin(x), Accumulate(acc, a, b) (acc -= a*b, possibly unreduced), Finish(acc, x,
//   negate), and kDelayedReduction with Normalize(acc) every reduce_every terms.
#ifndef MATRIXD_CORE_CUDA_ELIMINATION_FIELDS_CUH_
#define MATRIXD_CORE_CUDA_ELIMINATION_FIELDS_CUH_

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/cuda/modular_reduction.h"

namespace matrixd::cuda {

// Layout-compatible with std::complex<double>.
struct alignas(16) Complex128 {
  double re;
  double im;
};

// Pivot scores of non-finite entries: selectable (so that overflow shows up as a non-finite
// pivot) but never preferred to a finite one.
__device__ inline double FiniteScore(double score) { return score <= DBL_MAX ? score : DBL_MAX; }

struct RealField {
  using Value = double;
  using Accumulator = double;
  static constexpr bool kDelayedReduction = false;
  static constexpr double kFlopsPerUpdate = 2.0;
  int reduce_every = 0;  // unused

  __device__ static bool IsZero(double x) { return x == 0.0; }
  __device__ static double PivotScore(double x) { return FiniteScore(fabs(x - 1.0)); }
  __device__ static double Negate(double x) { return -x; }
  __device__ static double Mul(double a, double b) { return a * b; }
  __device__ static double MulSub(double acc, double a, double b) { return fma(-a, b, acc); }
  __device__ static double Inverse(double x) { return 1.0 / x; }

  __device__ static double Begin(double x) { return x; }
  __device__ static void Accumulate(double& acc, double a, double b) { acc = fma(-a, b, acc); }
  __device__ static void Normalize(double&) {}
  __device__ static double Finish(double acc, double, bool negate) { return negate ? -acc : acc; }
};

struct ComplexField {
  using Value = Complex128;
  using Accumulator = Complex128;
  static constexpr bool kDelayedReduction = false;
  static constexpr double kFlopsPerUpdate = 8.0;
  int reduce_every = 0;  // unused

  __device__ static bool IsZero(Complex128 x) { return x.re == 0.0 && x.im == 0.0; }
  __device__ static double PivotScore(Complex128 x) { return FiniteScore(hypot(x.re - 1.0, x.im)); }
  __device__ static Complex128 Negate(Complex128 x) { return {-x.re, -x.im}; }
  __device__ static Complex128 Mul(Complex128 a, Complex128 b) {
    return {fma(a.re, b.re, -a.im * b.im), fma(a.re, b.im, a.im * b.re)};
  }
  __device__ static Complex128 MulSub(Complex128 acc, Complex128 a, Complex128 b) {
    return {fma(-a.re, b.re, fma(a.im, b.im, acc.re)), fma(-a.re, b.im, fma(-a.im, b.re, acc.im))};
  }
  // Smith's algorithm: no overflow or underflow of c^2 + d^2 for entries near the double range.
  __device__ static Complex128 Inverse(Complex128 x) {
    if (fabs(x.re) >= fabs(x.im)) {
      const double r = x.im / x.re;
      const double den = fma(x.im, r, x.re);
      return {1.0 / den, -r / den};
    }
    const double r = x.re / x.im;
    const double den = fma(x.re, r, x.im);
    return {r / den, -1.0 / den};
  }

  __device__ static Complex128 Begin(Complex128 x) { return x; }
  __device__ static void Accumulate(Complex128& acc, Complex128 a, Complex128 b) {
    acc = MulSub(acc, a, b);
  }
  __device__ static void Normalize(Complex128&) {}
  __device__ static Complex128 Finish(Complex128 acc, Complex128, bool negate) {
    return negate ? Negate(acc) : acc;
  }
};

// Z/p with canonical residues in [0, p) as uint64.
struct ModU64Field {
  using Value = uint64_t;
  using Accumulator = Wide192;
  static constexpr bool kDelayedReduction = false;
  static constexpr double kFlopsPerUpdate = 2.0;  // one modular multiply and one subtraction
  BarrettModulus modulus;
  int reduce_every = 0;  // unused: a Wide192 holds up to 2^64 products

  __device__ static bool IsZero(uint64_t x) { return x == 0; }
  // Every non-zero entry scores the same: the leftmost non-zero wins (the paper's pivot).
  __device__ static double PivotScore(uint64_t) { return 0.0; }
  __device__ uint64_t Negate(uint64_t x) const { return modulus.Negate(x); }
  __device__ uint64_t Mul(uint64_t a, uint64_t b) const { return modulus.Mul(a, b); }
  __device__ uint64_t MulSub(uint64_t acc, uint64_t a, uint64_t b) const {
    return modulus.Sub(acc, modulus.Mul(a, b));
  }
  __device__ uint64_t Inverse(uint64_t x) const { return modulus.Inverse(x); }
  __device__ uint64_t FromSigned(int64_t v) const { return modulus.FromSigned(v); }

  __device__ static Wide192 Begin(uint64_t) { return Wide192{}; }
  __device__ static void Accumulate(Wide192& acc, uint64_t a, uint64_t b) {
    MultiplyAccumulate(a, b, acc);
  }
  __device__ static void Normalize(Wide192&) {}
  __device__ uint64_t Finish(const Wide192& acc, uint64_t x, bool negate) const {
    const uint64_t r = modulus.Sub(x, modulus.Reduce(acc));
    return negate ? modulus.Negate(r) : r;
  }
};

// Z/p for p < 2^26 with balanced residues |r| <= floor(p/2) held exactly in float64.
struct ModDoubleField {
  using Value = double;
  using Accumulator = double;
  static constexpr bool kDelayedReduction = true;
  static constexpr double kFlopsPerUpdate = 2.0;
  double p = 0.0;
  double inverse_p = 0.0;  // 1/p rounded: the quotient estimate is off by at most one
  double half = 0.0;       // floor(p/2)
  int reduce_every = 0;    // terms a*b that fit in an accumulator below 2^53 after a reduction

  // x mod p, balanced. REQUIRES: |x| < 2^53 and x an integer.
  __device__ double Reduce(double x) const {
    const double q = rint(x * inverse_p);
    double r = fma(-q, p, x);  // exact: an integer of magnitude below 2p
    if (r > half) r -= p;
    if (r < -half) r += p;
    return r;
  }
  __device__ double FromSigned(int64_t v) const {
    const auto modulus = static_cast<int64_t>(p);
    return Reduce(static_cast<double>(v % modulus));
  }
  __device__ static bool IsZero(double x) { return x == 0.0; }
  __device__ static double PivotScore(double) { return 0.0; }
  __device__ static double Negate(double x) { return -x; }
  __device__ double Mul(double a, double b) const { return Reduce(a * b); }
  __device__ double MulSub(double acc, double a, double b) const { return Reduce(fma(-a, b, acc)); }
  __device__ double Inverse(double x) const {
    const auto modulus = static_cast<int64_t>(p);
    int64_t a = static_cast<int64_t>(x);
    if (a < 0) a += modulus;
    // Extended Euclid in 32-bit arithmetic (p < 2^26), much cheaper than 64-bit division.
    int32_t r0 = static_cast<int32_t>(modulus);
    int32_t r1 = static_cast<int32_t>(a);
    int32_t s0 = 0;
    int32_t s1 = 1;
    while (r1 != 0) {
      const int32_t q = r0 / r1;
      const int32_t r2 = r0 - q * r1;
      const int32_t s2 = s0 - q * s1;
      r0 = r1;
      r1 = r2;
      s0 = s1;
      s1 = s2;
    }
    return Reduce(static_cast<double>(s0));
  }

  __device__ static double Begin(double x) { return x; }
  __device__ static void Accumulate(double& acc, double a, double b) { acc = fma(-a, b, acc); }
  __device__ void Normalize(double& acc) const { acc = Reduce(acc); }
  __device__ double Finish(double acc, double, bool negate) const {
    const double r = Reduce(acc);
    return negate ? -r : r;
  }
};

// A pivot candidate: the column of a non-zero entry and its score. Candidates are totally ordered
// by (score, column), so every block and every reduction order picks the same pivot.
struct PivotChoice {
  double score;
  int column;
  int negated;  // the blocked kernels' lazily applied column sign, carried with the candidate
};

inline constexpr int kNoColumn = 0x7fffffff;

__device__ inline PivotChoice NoPivot() { return {HUGE_VAL, kNoColumn, 0}; }
__device__ inline bool Better(const PivotChoice& a, const PivotChoice& b) {
  return a.score < b.score || (a.score == b.score && a.column < b.column);
}
__device__ inline PivotChoice WarpBest(PivotChoice c) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const PivotChoice other{__shfl_xor_sync(0xffffffffu, c.score, offset),
                            __shfl_xor_sync(0xffffffffu, c.column, offset),
                            __shfl_xor_sync(0xffffffffu, c.negated, offset)};
    if (Better(other, c)) c = other;
  }
  return c;
}
// The best candidate of the block, returned to every thread, past one barrier. `scratch` holds
// one entry per warp; the caller must pass a barrier before the next call reuses it.
// REQUIRES: all threads of the block call it; blockDim.x a multiple of 32.
__device__ inline PivotChoice BlockBest(PivotChoice c, PivotChoice* scratch) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
  c = WarpBest(c);
  if (lane == 0) scratch[threadIdx.x / 32] = c;
  __syncthreads();
  return WarpBest(lane < warps ? scratch[lane] : NoPivot());
}

// A warp shuffle of any 8- or 16-byte value.
template <typename T>
__device__ T ShuffleFrom(T value, int lane) {
  static_assert(sizeof(T) == 8 || sizeof(T) == 16);
  if constexpr (sizeof(T) == 8) {
    unsigned long long bits;
    memcpy(&bits, &value, 8);
    bits = __shfl_sync(0xffffffffu, bits, lane);
    memcpy(&value, &bits, 8);
  } else {
    double parts[2];
    memcpy(parts, &value, 16);
    parts[0] = __shfl_sync(0xffffffffu, parts[0], lane);
    parts[1] = __shfl_sync(0xffffffffu, parts[1], lane);
    memcpy(&value, parts, 16);
  }
  return value;
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_ELIMINATION_FIELDS_CUH_
