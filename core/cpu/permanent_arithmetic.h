// The arithmetic of the permanent's real Gray-code walks, shared by the CPU walks
// (core/cpu/permanent.cc) and the CUDA kernels (core/cuda/permanent_walks.cuh) so that both
// round alike: error-free transformations, double-double products, and the per-row update and
// per-term product of each PermanentPrecision. Header-only; every function is host and device
// code under nvcc. On the device each operation is an _rn intrinsic, which the compiler never
// contracts into an FMA nor reorders; on the host it is a plain operation, which GCC contracts
// only across a multiply (the transformations below have none outside explicit std::fma).
// REQUIRES: IEEE double arithmetic, round to nearest, no -ffast-math.
#ifndef MATRIXD_CORE_CPU_PERMANENT_ARITHMETIC_H_
#define MATRIXD_CORE_CPU_PERMANENT_ARITHMETIC_H_

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define MATRIXD_WALK_INLINE __host__ __device__ __forceinline__
#else
#define MATRIXD_WALK_INLINE [[gnu::always_inline]] inline
#endif

namespace matrixd::walk {

// How a real walk's row sums and products are carried (see PermanentPrecision, core/operations.h).
//   kDoubleDoubleRows: row sums hi + lo updated by TwoSum, products in double-double (EXTENDED
//                      when some row sum may round in double).
//   kExactRows:        row sums in plain double, which PermanentRowSumsAreExact proved never
//                      round; products in double-double (EXTENDED otherwise).
//   kFast:             row sums and products in plain double, the row sums restarted every
//                      2^kFastSegmentLog2 terms (FAST).
enum class RealArithmetic { kDoubleDoubleRows, kExactRows, kFast };

// FAST restarts its row sums from compensated sums every 2^12 terms: a plain row sum then carries
// at most 2^12 roundings of <= 2^-53 max_k |r_i(k)| each (sqrt(2^12) = 64 of them typically), at
// a restart cost of (bits - 11) column adds per 2^12 terms (< 1% at n = 36).
inline constexpr int kFastSegmentLog2 = 12;

struct DoubleDouble {
  double hi;
  double lo;
};

MATRIXD_WALK_INLINE double Add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
MATRIXD_WALK_INLINE double Sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
MATRIXD_WALK_INLINE double Mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
MATRIXD_WALK_INLINE double Fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// x with its sign bit flipped where mask is 1 << 63: an integer instruction, which leaves the
// FP64 pipe (the walk's bottleneck) to the sums and products.
inline constexpr uint64_t kSignBit = uint64_t{1} << 63;
MATRIXD_WALK_INLINE double FlipSign(double x, uint64_t mask) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(__double_as_longlong(x) ^ static_cast<long long>(mask));
#else
  return std::bit_cast<double>(std::bit_cast<uint64_t>(x) ^ mask);
#endif
}

// s = fl(a + b) and e with s + e == a + b exactly (Knuth's TwoSum).
MATRIXD_WALK_INLINE void TwoSum(double a, double b, double& s, double& e) {
  s = Add(a, b);
  const double b_virtual = Sub(s, a);
  e = Add(Sub(a, Sub(s, b_virtual)), Sub(b, b_virtual));
}

// sum + (hi + lo), renormalised (CompensatedSum::Add of core/cpu/compensated_sum.h).
MATRIXD_WALK_INLINE DoubleDouble AddDd(DoubleDouble sum, double hi, double lo) {
  double s, e;
  TwoSum(sum.hi, hi, s, e);
  e = Add(e, Add(sum.lo, lo));
  DoubleDouble out;
  out.hi = Add(s, e);
  out.lo = Sub(e, Sub(out.hi, s));
  return out;
}

// (a.hi + a.lo)(x_hi + x_lo) to ~2^-104 relative: a.hi x_hi exactly by FMA (TwoProduct) plus the
// cross terms; a.lo x_lo is below that precision. Needs no renormalisation over a chain of n
// factors: |lo| grows by at most ~2^-53 |hi| per factor.
MATRIXD_WALK_INLINE DoubleDouble MulDd(DoubleDouble a, double x_hi, double x_lo) {
  const double hi = Mul(a.hi, x_hi);
  return {hi, Fma(a.lo, x_hi, Fma(a.hi, x_lo, Fma(a.hi, x_hi, -hi)))};
}
// As MulDd for a factor that is a double: three FP64 operations instead of four.
MATRIXD_WALK_INLINE DoubleDouble MulDd(DoubleDouble a, double x) {
  const double hi = Mul(a.hi, x);
  return {hi, Fma(a.lo, x, Fma(a.hi, x, -hi))};
}

// r + x with r kept as hi + lo: the lo parts collect the exact rounding errors, so the row sums
// do not drift over a walk of 2^40 steps.
MATRIXD_WALK_INLINE void AddToRowSum(double& hi, double& lo, double x) {
  double e;
  TwoSum(hi, x, hi, e);
  lo = Add(lo, e);
}

// One row sum of a real walk: hi + lo in double-double (kDoubleDoubleRows), or a plain double
// (the others; lo is then the constant 0, so that an array of row sums is an array of doubles,
// which the CPU's vectorizer loads without shuffles).
struct DoubleDoubleRowSum {
  double hi;
  double lo;

  MATRIXD_WALK_INLINE void Set(double base_hi, double base_lo) {
    hi = base_hi;
    lo = base_lo;
  }
  // Adds x (a step, sign already applied).
  MATRIXD_WALK_INLINE void Update(double x) { AddToRowSum(hi, lo, x); }
};
struct PlainRowSum {
  double hi;
  static constexpr double lo = 0.0;

  MATRIXD_WALK_INLINE void Set(double base_hi, double /*base_lo*/) { hi = base_hi; }
  MATRIXD_WALK_INLINE void Update(double x) { hi = Add(hi, x); }
};
template <RealArithmetic A>
using RowSum =
    std::conditional_t<A == RealArithmetic::kDoubleDoubleRows, DoubleDoubleRowSum, PlainRowSum>;

// The running product of one chain of factors; Value gives it as hi + lo (lo = 0 for kFast).
template <RealArithmetic A>
struct Product {
  DoubleDouble value;

  MATRIXD_WALK_INLINE void Start(const RowSum<A>& r) { value = {r.hi, r.lo}; }
  MATRIXD_WALK_INLINE void Multiply(const RowSum<A>& r) {
    if constexpr (A == RealArithmetic::kDoubleDoubleRows) {
      value = MulDd(value, r.hi, r.lo);
    } else if constexpr (A == RealArithmetic::kExactRows) {
      value = MulDd(value, r.hi);
    } else {
      value.hi = Mul(value.hi, r.hi);
    }
  }
  MATRIXD_WALK_INLINE void Multiply(const Product& other) {
    if constexpr (A == RealArithmetic::kFast) {
      value.hi = Mul(value.hi, other.value.hi);
    } else {
      value = MulDd(value, other.value.hi, other.value.lo);
    }
  }
};

// The sparse walk's products (core/cpu/permanent_preparation.h): the product of a block of four
// row sums as (r0 r1)(r2 r3), and the product of two such products. With exact row sums r0 r1 is
// exact by FMA (TwoProduct), so a block costs 8 operations instead of 3 x 3 = 9 in a chain. Every
// product is a double-double (FAST: a double, lo = 0) taken afresh from the current row sums,
// never updated by division, so no error accumulates across steps: a term is a product of the
// n row sums with at most n - 1 roundings of each arithmetic's multiplication (FAST 2^-53,
// double-double ~2^-104 relative), as in RowProduct, only associated differently.
template <RealArithmetic A>
MATRIXD_WALK_INLINE DoubleDouble BlockProduct(const RowSum<A>& r0, const RowSum<A>& r1,
                                              const RowSum<A>& r2, const RowSum<A>& r3) {
  if constexpr (A == RealArithmetic::kFast) {
    return {Mul(Mul(r0.hi, r1.hi), Mul(r2.hi, r3.hi)), 0.0};
  } else {
    DoubleDouble left, right;
    if constexpr (A == RealArithmetic::kExactRows) {
      left.hi = Mul(r0.hi, r1.hi);
      left.lo = Fma(r0.hi, r1.hi, -left.hi);
      right.hi = Mul(r2.hi, r3.hi);
      right.lo = Fma(r2.hi, r3.hi, -right.hi);
    } else {
      left = MulDd({r0.hi, r0.lo}, r1.hi, r1.lo);
      right = MulDd({r2.hi, r2.lo}, r3.hi, r3.lo);
    }
    return MulDd(left, right.hi, right.lo);
  }
}
template <RealArithmetic A>
MATRIXD_WALK_INLINE DoubleDouble MultiplyProducts(DoubleDouble a, DoubleDouble b) {
  if constexpr (A == RealArithmetic::kFast) {
    return {Mul(a.hi, b.hi), 0.0};
  } else {
    return MulDd(a, b.hi, b.lo);
  }
}

// Only in nvcc's device pass: its host pass hands the code to the host compiler, which warns.
#if defined(__CUDA_ARCH__)
#define MATRIXD_WALK_UNROLL _Pragma("unroll")
#else
#define MATRIXD_WALK_UNROLL
#endif

// The product of the row sums r[0, kCount) in four independent chains (consecutive
// multiplications then do not wait on each other's latency), combined as (c0 c1)(c2 c3).
// REQUIRES: kCount a multiple of 4; rows past the order hold 1.
template <int kCount, RealArithmetic A>
MATRIXD_WALK_INLINE DoubleDouble ChainProduct(const RowSum<A>* r) {
  static_assert(kCount % 4 == 0 && kCount >= 4);
  Product<A> chain[4];
  MATRIXD_WALK_UNROLL
  for (int c = 0; c < 4; ++c) chain[c].Start(r[c]);
  MATRIXD_WALK_UNROLL
  for (int i = 4; i < kCount; i += 4) {
    MATRIXD_WALK_UNROLL
    for (int c = 0; c < 4; ++c) chain[c].Multiply(r[i + c]);
  }
  chain[0].Multiply(chain[1]);
  chain[2].Multiply(chain[3]);
  chain[0].Multiply(chain[2]);
  if constexpr (A == RealArithmetic::kFast) chain[0].value.lo = 0.0;
  return chain[0].value;
}

#if defined(__CUDACC__)
// ChainProduct of the whole array.
template <int N, RealArithmetic A>
__device__ __forceinline__ DoubleDouble RowProduct(const RowSum<A> (&r)[N]) {
  return ChainProduct<N, A>(r);
}
#endif  // __CUDACC__

// As RowProduct for a runtime padded order (the CPU's). REQUIRES: padded a multiple of 4, >= 4.
template <RealArithmetic A>
MATRIXD_WALK_INLINE DoubleDouble RowProduct(const RowSum<A>* r, int padded) {
  Product<A> chain[4];
  for (int c = 0; c < 4; ++c) chain[c].Start(r[c]);
  for (int i = 4; i < padded; i += 4) {
    for (int c = 0; c < 4; ++c) chain[c].Multiply(r[i + c]);
  }
  chain[0].Multiply(chain[1]);
  chain[2].Multiply(chain[3]);
  chain[0].Multiply(chain[2]);
  if constexpr (A == RealArithmetic::kFast) chain[0].value.lo = 0.0;
  return chain[0].value;
}

}  // namespace matrixd::walk

#endif  // MATRIXD_CORE_CPU_PERMANENT_ARITHMETIC_H_
