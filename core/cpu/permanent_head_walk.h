// The head walk of a real permanent (the GPU's sparse walk; host and device code under
// nvcc, so that the CPU tests run the kernel's own arithmetic). The matrix is ordered for the
// sparse walk (OrderForSparseWalk, core/cpu/permanent_preparation.h), so the columns of the
// lowest walk bits touch only a prefix of the rows. With kHead head rows and head_bits the number
// of low bits whose columns touch only head rows (PlanHeadWalk), each aligned group of
// 2^head_bits consecutive terms shares the product T of the tail rows [kHead, N):
//   sum_(k in group) (-1)^k prod_i r_i(k) = T * sum_(k in group) (-1)^k prod_(i<kHead) r_i(k).
// Inside a group a step updates the kHead head rows and the term multiplies them: a dense walk of
// kHead rows, straight-line code with four product chains like the dense walk's, no per-block
// branch. Between groups a step updates all N rows and the tail product is taken afresh.
//
// Error analysis. The head products are those of the dense walk (RowProduct's chains), each
// group's sum is a double-double sum of them, and T (double-double, the same chains) multiplies
// that sum with one MulDd: a term's relative error stays ~2^-104 under EXTENDED (FAST: the
// head product's n roundings of 2^-53), and the group sums' errors add up as the terms' did.
#ifndef MATRIXD_CORE_CPU_PERMANENT_HEAD_WALK_H_
#define MATRIXD_CORE_CPU_PERMANENT_HEAD_WALK_H_

#include <bit>
#include <cstdint>

#include "core/cpu/permanent_arithmetic.h"

namespace matrixd::walk {

// The head sizes the head walk is built for (the GPU's kernels; the bench's sweep).
inline constexpr int kHeadWalkRows[] = {8, 12, 16, 20};
// head_bits is at most this: the GPU's chunks are at least 2^6 terms, so a group never crosses
// one.
inline constexpr int kMaxHeadWalkBits = 6;

MATRIXD_WALK_INLINE uint64_t GrayCodeOf(uint64_t k) { return k ^ (k >> 1); }

// The lowest set bit of t > 0.
MATRIXD_WALK_INLINE int LowestSetBit(uint32_t t) {
#if defined(__CUDA_ARCH__)
  return __ffs(static_cast<int>(t)) - 1;
#else
  return std::countr_zero(t);
#endif
}

// Adds `sum` and the terms k in [begin, begin + length) of the walk whose steps are
// `steps` (step b's N entries at steps[b * N, (b + 1) * N)), and returns it; r holds the row sums
// of GrayCode(begin) on entry and those of GrayCode(begin + length - 1) on return.
// REQUIRES: N - kHead a positive multiple of 4, kHead a multiple of 4; begin a multiple of length,
// length a multiple of 2^head_bits; the steps of bits < head_bits are zero in rows >= kHead.
template <int N, int kHead, RealArithmetic A>
MATRIXD_WALK_INLINE DoubleDouble HeadWalkSum(RowSum<A> (&r)[N], const double* steps, int head_bits,
                                             uint64_t begin, uint32_t length, DoubleDouble sum) {
  static_assert(kHead % 4 == 0 && N % 4 == 0 && kHead < N);
  const uint32_t group = 1u << head_bits;
  for (uint32_t first = 0;;) {
    const DoubleDouble tail = ChainProduct<N - kHead, A>(r + kHead);
    DoubleDouble group_sum{0.0, 0.0};
    for (uint32_t j = 0;;) {
      const DoubleDouble head = ChainProduct<kHead, A>(r);
      // (-1)^k.
      const uint64_t term_sign = ((begin + first + j) & 1) != 0 ? kSignBit : 0;
      group_sum = AddDd(group_sum, FlipSign(head.hi, term_sign), FlipSign(head.lo, term_sign));
      if (++j == group) break;
      const int bit = LowestSetBit(j);  // first is a multiple of group: the bit of step first + j
      const uint64_t step_sign =
          ((GrayCodeOf(begin + first + j) >> bit) & 1) != 0 ? uint64_t{0} : kSignBit;
      const double* s = steps + bit * N;
      MATRIXD_WALK_UNROLL
      for (int i = 0; i < kHead; ++i) r[i].Update(FlipSign(s[i], step_sign));
    }
    const DoubleDouble group_terms = MulDd(group_sum, tail.hi, tail.lo);
    sum = AddDd(sum, group_terms.hi, group_terms.lo);
    first += group;
    if (first == length) break;
    const int bit = LowestSetBit(first);
    const uint64_t step_sign =
        ((GrayCodeOf(begin + first) >> bit) & 1) != 0 ? uint64_t{0} : kSignBit;
    const double* s = steps + bit * N;
    MATRIXD_WALK_UNROLL
    for (int i = 0; i < N; ++i) r[i].Update(FlipSign(s[i], step_sign));
  }
  return sum;
}

}  // namespace matrixd::walk

#endif  // MATRIXD_CORE_CPU_PERMANENT_HEAD_WALK_H_
