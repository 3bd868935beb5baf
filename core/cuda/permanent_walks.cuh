// The Gray-code walks of Ryser's and Glynn's permanent formulas on the device, after SUperman
// (Elbek, Tasyaran, Ucar, Kaya): the walk over k in [0, 2^bits) is cut into aligned chunks of
// 2^chunk_log2 consecutive terms, one per thread. A thread starts from the row sums of
// GrayCode(first k) computed directly, then moves them one column at a time, keeping the n row
// sums in registers: the order is a template parameter (padded to a multiple of 4 with rows whose
// sum is 1), so every loop over the rows unrolls and the arrays never touch local memory.
//
// Because every chunk starts at a multiple of its length, step t of every thread flips the same
// bit, countr_zero(t) (SUperman's "chunk size a power of two" observation): the warp reads one
// column at one shared-memory address (a broadcast, no bank conflict) and never diverges; only
// the direction (add or subtract the column) differs between threads.
//
// Real walks take their arithmetic from core/cpu/permanent_arithmetic.h, as the CPU walks do
// (the same row-sum updates, products in the same four chains, the same FAST restarts), so the two
// backends round alike. The sparse real walk (core/cpu/permanent_preparation.h) keeps the products
// of the N / 4 row blocks and their suffix products in registers, indexed by compile-time
// constants, and tests each block's bit in the step's block mask: the mask is the same for every
// thread of a warp (all flip the same bit), so the branches never diverge, and a block that the
// step does not touch costs no FP64 instruction. The head walk (kHead > 0,
// core/cpu/permanent_head_walk.h) instead walks the first kHead rows densely inside groups of
// 2^head_bits terms and multiplies each group's sum by the product of the other rows: straight-line
// code without per-block branches, which the in-order issue of a warp runs at the dense walk's
// rate.
//
// Each thread sums its terms in double-double (modular: mod p), the block reduces them in a fixed
// order, and ReducePartialsKernel combines the blocks' partial sums in a fixed order, so a result
// does not depend on timing. Included by permanent.cu only.
#ifndef MATRIXD_CORE_CUDA_PERMANENT_WALKS_CUH_
#define MATRIXD_CORE_CUDA_PERMANENT_WALKS_CUH_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/cpu/permanent_arithmetic.h"
#include "core/cpu/permanent_head_walk.h"

namespace matrixd::cuda {

inline constexpr int kWalkThreads = 128;
// Padded orders are multiples of kOrderStep up to kMaxWalkOrder: twelve instantiations per walk
// kind, and at most 3 dummy rows (< 10% extra work from n = 30 on).
inline constexpr int kOrderStep = 4;
inline constexpr int kMaxWalkOrder = 48;
inline constexpr int kReduceThreads = 1024;
// Complex walks keep plain double row sums and restart them from scratch every 2^10 steps, as the
// CPU does (core/cpu/permanent.cc): that bounds the drift of r + s - s + s ... to ~32 ulp for 1-2%
// of the work. Real walks carry their row sums in double-double instead and need no restart.
inline constexpr int kComplexSegmentLog2 = 10;

using walk::DoubleDouble;

struct ComplexDoubleDouble {
  DoubleDouble re;
  DoubleDouble im;
};

// Where one launch (a slice of the walk) sits in the walk.
struct WalkSlice {
  int bits;             // the walk has 2^bits terms
  int chunk_log2;       // each thread walks 2^chunk_log2 consecutive terms
  uint64_t threads;     // 2^(bits - chunk_log2): the threads of the whole walk
  int64_t first_block;  // the walk-wide index of this launch's block 0
};

// The device data of one walk: `steps` holds bits columns of `order` entries each (row-major,
// step b at [b * order, (b + 1) * order)), followed by the row sums at k = 0 in double-double
// (order entries of hi parts, then order of lo parts), padded to the kernel's order (base 1,
// steps 0), and for the sparse walk one more row of `order` words whose first bits hold the block
// mask of each step (cpu::PermanentBlockMasks, bit-cast to double); `partials` one partial sum per
// block of the walk. kHead > 0 (with kSparse): the head walk with kHead head rows, whose groups
// are 2^head_bits terms; its kernels exist for orders above kHead only.
template <walk::RealArithmetic A, bool kSparse, int kHead = 0>
struct RealWalkData {
  static_assert(kHead == 0 || kSparse);
  using Step = double;
  using Partial = DoubleDouble;
  // Rows of the shared copy after the steps: the base, and the sparse walk's masks.
  static constexpr int kExtraSteps = kSparse ? 3 : 2;
  static constexpr int kMinOrder = kHead + 4;
  const double* steps;
  DoubleDouble* partials;
  int head_bits = 0;
};

// `steps` is followed by the base: bits * order + order entries.
struct ComplexWalkData {
  static constexpr int kMinOrder = 4;
  using Step = double2;
  using Partial = ComplexDoubleDouble;
  static constexpr int kExtraSteps = 1;
  const double2* steps;
  ComplexDoubleDouble* partials;
};

// Modulo an odd prime p < 2^62; products by Montgomery multiplication (R = 2^64), so a product
// of n factors carries R^-(n-1), which the host removes. Padded rows have base R mod p.
struct ModularWalkData {
  static constexpr int kMinOrder = 4;
  using Step = uint64_t;
  using Partial = uint64_t;
  static constexpr int kExtraSteps = 0;
  const uint64_t* steps;
  const uint64_t* base;
  uint64_t p;
  uint64_t neg_inverse;  // -p^-1 mod 2^64
  uint64_t* partials;
};

// ---- Arithmetic: core/cpu/permanent_arithmetic.h for the reals, Montgomery for INT64. ----

using walk::AddDd;
using walk::FlipSign;
using walk::kSignBit;

__device__ __forceinline__ uint64_t AddModP(uint64_t a, uint64_t b, uint64_t p) {
  const uint64_t s = a + b;  // < 2^63 for a, b < p < 2^62
  return s >= p ? s - p : s;
}
__device__ __forceinline__ uint64_t SubModP(uint64_t a, uint64_t b, uint64_t p) {
  return a >= b ? a - b : a + p - b;
}

// A value in [0, 2p) congruent to a b 2^-64 mod p. REQUIRES: a, b < 2p, p < 2^62 odd. t = a b
// and m = (t mod 2^64)(-p^-1) make t + m p divisible by 2^64, so its low words cancel: they sum to
// 0 (t_lo = 0) or to 2^64 (a carry of 1 into the high word).
__device__ __forceinline__ uint64_t MontgomeryMultiplyLazy(uint64_t a, uint64_t b, uint64_t p,
                                                           uint64_t neg_inverse) {
  const uint64_t t_lo = a * b;
  const uint64_t t_hi = __umul64hi(a, b);
  const uint64_t m = t_lo * neg_inverse;
  return t_hi + __umul64hi(m, p) + (t_lo != 0 ? 1 : 0);
}

// ---- The complex and modular products of the row sums, in four independent chains so that
// consecutive multiplications do not wait on each other's latency (the real ones:
// walk::RowProduct). ----

__device__ __forceinline__ void ComplexMultiply(double& re, double& im, double x, double y) {
  const double new_re = re * x - im * y;
  im = re * y + im * x;
  re = new_re;
}

template <int N>
__device__ __forceinline__ double2 ComplexProduct(const double (&re)[N], const double (&im)[N]) {
  static_assert(N % 4 == 0 && N >= 4);
  double chain_re[4];
  double chain_im[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    chain_re[c] = re[c];
    chain_im[c] = im[c];
  }
#pragma unroll
  for (int i = 4; i < N; i += 4) {
#pragma unroll
    for (int c = 0; c < 4; ++c) ComplexMultiply(chain_re[c], chain_im[c], re[i + c], im[i + c]);
  }
  ComplexMultiply(chain_re[0], chain_im[0], chain_re[1], chain_im[1]);
  ComplexMultiply(chain_re[2], chain_im[2], chain_re[3], chain_im[3]);
  ComplexMultiply(chain_re[0], chain_im[0], chain_re[2], chain_im[2]);
  return make_double2(chain_re[0], chain_im[0]);
}

// prod_i r_i R^-(N-1) mod p (Montgomery), in [0, p).
template <int N>
__device__ __forceinline__ uint64_t ModularProduct(const uint64_t (&r)[N], uint64_t p,
                                                   uint64_t neg_inverse) {
  static_assert(N % 4 == 0 && N >= 4);
  uint64_t chain[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) chain[c] = r[c];
#pragma unroll
  for (int i = 4; i < N; i += 4) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      chain[c] = MontgomeryMultiplyLazy(chain[c], r[i + c], p, neg_inverse);
    }
  }
  const uint64_t left = MontgomeryMultiplyLazy(chain[0], chain[1], p, neg_inverse);
  const uint64_t right = MontgomeryMultiplyLazy(chain[2], chain[3], p, neg_inverse);
  const uint64_t product = MontgomeryMultiplyLazy(left, right, p, neg_inverse);
  return product >= p ? product - p : product;
}

// ---- Reductions in a fixed order. ----

struct RealCombine {
  __device__ DoubleDouble operator()(DoubleDouble a, DoubleDouble b) const {
    return AddDd(a, b.hi, b.lo);
  }
};
struct ComplexCombine {
  __device__ ComplexDoubleDouble operator()(ComplexDoubleDouble a, ComplexDoubleDouble b) const {
    return {AddDd(a.re, b.re.hi, b.re.lo), AddDd(a.im, b.im.hi, b.im.lo)};
  }
};
struct ModularCombine {
  uint64_t p;
  __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return AddModP(a, b, p); }
};

template <walk::RealArithmetic A, bool kSparse, int kHead>
inline RealCombine CombineOf(const RealWalkData<A, kSparse, kHead>&) {
  return {};
}
inline ComplexCombine CombineOf(const ComplexWalkData&) { return {}; }
inline ModularCombine CombineOf(const ModularWalkData& data) { return {data.p}; }

__device__ __forceinline__ DoubleDouble ShuffleDown(DoubleDouble v, int offset) {
  return {__shfl_down_sync(0xffffffffu, v.hi, offset), __shfl_down_sync(0xffffffffu, v.lo, offset)};
}
__device__ __forceinline__ ComplexDoubleDouble ShuffleDown(ComplexDoubleDouble v, int offset) {
  return {ShuffleDown(v.re, offset), ShuffleDown(v.im, offset)};
}
__device__ __forceinline__ uint64_t ShuffleDown(uint64_t v, int offset) {
  return __shfl_down_sync(0xffffffffu, v, offset);
}

// The combination of every thread's value, in thread 0 (others: unspecified). Every thread of
// the block calls it. T{} is the neutral element.
template <int kThreads, typename T, typename Combine>
__device__ T BlockReduce(T value, const Combine& combine) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024);
  __shared__ T warp_values[kThreads / 32];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) value = combine(value, ShuffleDown(value, offset));
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) warp_values[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < kThreads / 32 ? warp_values[lane] : T{};
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      value = combine(value, ShuffleDown(value, offset));
    }
  }
  return value;
}

// ---- The walks ----

template <typename T>
__device__ __forceinline__ T* WalkSharedMemory() {
  extern __shared__ __align__(16) unsigned char walk_shared_memory[];
  return reinterpret_cast<T*>(walk_shared_memory);
}

// Copies the steps into shared memory; returns them.
template <typename Step>
__device__ __forceinline__ const Step* StageSteps(const Step* steps, int count) {
  Step* shared = WalkSharedMemory<Step>();
  for (int q = threadIdx.x; q < count; q += kWalkThreads) shared[q] = steps[q];
  __syncthreads();
  return shared;
}

// GrayCode(first) for a first term that is a multiple of 2^aligned_log2 has no set bit below
// aligned_log2 - 1: the start of a chunk adds only the columns from there up.
__device__ __forceinline__ int FirstStartBit(int aligned_log2) {
  return aligned_log2 > 0 ? aligned_log2 - 1 : 0;
}

using walk::GrayCodeOf;

// Whether step t of a chunk starting at `begin` adds (true) or subtracts the column of bit
// countr_zero(t): GrayCode(begin + t) has that bit set after the step.
__device__ __forceinline__ bool StepAdds(uint64_t begin, uint32_t t, int bit) {
  return ((GrayCodeOf(begin + t) >> bit) & 1) != 0;
}

// The row sums of GrayCode(k) from the base, in double-double, for a k that is a multiple of
// 2^aligned_log2; rounded to double unless arithmetic A keeps the lo parts (then exact for the
// rows PermanentRowSumsAreExact covers). Row by row, so that only one row's double-double sum is
// live besides r; the base is read through a volatile pointer, since the compiler would otherwise
// keep its 2N values in registers across FAST's restarts.
template <int N, walk::RealArithmetic A>
__device__ __forceinline__ void StartRealRowSums(const double* steps, const volatile double* base,
                                                 int bits, int aligned_log2, uint64_t k,
                                                 walk::RowSum<A> (&r)[N]) {
  const uint64_t gray = GrayCodeOf(k);
  const int first_bit = FirstStartBit(aligned_log2);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    double hi = base[i];
    double lo = base[N + i];
    // The columns of the set bits of GrayCode(k), selected rather than branched on: the bits
    // differ between threads, and adding 0 is exact.
    for (int b = first_bit; b < bits; ++b) {
      const bool set = ((gray >> b) & 1) != 0;
      walk::AddToRowSum(hi, lo, set ? steps[b * N + i] : 0.0);
    }
    if constexpr (A == walk::RealArithmetic::kDoubleDoubleRows) {
      r[i].Set(hi, lo);
    } else {
      r[i].Set(walk::Add(hi, lo), 0.0);
    }
  }
}

// The sparse walk's cached products: block[q] of the rows [4q, 4q + 4), suffix[q] =
// block[q] ... block[N / 4 - 1], so that the term is suffix[0]. Refresh adds `step` (its sign
// flipped by step_sign; kUpdate) to the rows of the blocks of `mask` (bit q: block q; adding a
// zero entry leaves a row sum as it was), recomputes those blocks' products, and the suffix
// products from the highest of them down. The loop unrolls, and every branch depends on the mask
// alone.
template <int N, walk::RealArithmetic A>
struct BlockProducts {
  static constexpr int kBlocks = N / 4;
  DoubleDouble block[kBlocks];
  DoubleDouble suffix[kBlocks];

  template <bool kUpdate>
  __device__ __forceinline__ void Refresh(walk::RowSum<A> (&r)[N], uint64_t mask,
                                          const double* step, uint64_t step_sign) {
#pragma unroll
    for (int q = kBlocks - 1; q >= 0; --q) {
      if ((mask >> q) == 0) continue;
      if (((mask >> q) & 1) != 0) {
        if constexpr (kUpdate) {
#pragma unroll
          for (int i = 4 * q; i < 4 * q + 4; ++i) r[i].Update(FlipSign(step[i], step_sign));
        }
        block[q] = walk::BlockProduct<A>(r[4 * q], r[4 * q + 1], r[4 * q + 2], r[4 * q + 3]);
      }
      if (q + 1 < kBlocks) {
        suffix[q] = walk::MultiplyProducts<A>(block[q], suffix[q + 1]);
      } else {
        suffix[q] = block[q];
      }
    }
  }
};

template <int N, walk::RealArithmetic A, bool kSparse, int kHead>
__global__ void __launch_bounds__(kWalkThreads)
    WalkKernel(WalkSlice slice, RealWalkData<A, kSparse, kHead> data) {
  static_assert(N % 4 == 0);
  // The block walk's cached products (the head and dense walks have none).
  constexpr bool kBlocks = kSparse && kHead == 0;
  const double* steps =
      StageSteps(data.steps, (slice.bits + RealWalkData<A, kSparse, kHead>::kExtraSteps) * N);
  const volatile double* base = steps + slice.bits * N;
  // The sparse walk's block masks, after the base.
  const double* masks = steps + (slice.bits + 2) * N;
  const int64_t block = slice.first_block + blockIdx.x;
  const uint64_t thread = static_cast<uint64_t>(block) * kWalkThreads + threadIdx.x;
  DoubleDouble sum{0.0, 0.0};
  if (thread < slice.threads) {
    const uint64_t begin = thread << slice.chunk_log2;
    const uint32_t length = 1u << slice.chunk_log2;
    // FAST restarts its plain row sums every 2^kFastSegmentLog2 terms, as the CPU does; the
    // others walk the chunk through (their row sums do not drift).
    const int segment_log2 =
        A == walk::RealArithmetic::kFast && slice.chunk_log2 > walk::kFastSegmentLog2
            ? walk::kFastSegmentLog2
            : slice.chunk_log2;
    const uint32_t segment = 1u << segment_log2;
    walk::RowSum<A> r[N];
    BlockProducts<N, A> products;
    for (uint32_t first = 0; first < length; first += segment) {
      StartRealRowSums<N, A>(steps, base, slice.bits, segment_log2, begin + first, r);
      if constexpr (kHead > 0) {
        sum = walk::HeadWalkSum<N, kHead, A>(r, steps, data.head_bits, begin + first, segment, sum);
        continue;
      }
      if constexpr (kBlocks) products.template Refresh<false>(r, ~uint64_t{0}, nullptr, 0);
      const uint32_t end = first + segment;
      for (uint32_t t = first;;) {
        DoubleDouble term;
        if constexpr (kBlocks) {
          term = products.suffix[0];
        } else {
          term = walk::RowProduct<N, A>(r);
        }
        // (-1)^k.
        const uint64_t term_sign = ((begin + t) & 1) != 0 ? kSignBit : 0;
        sum = AddDd(sum, FlipSign(term.hi, term_sign), FlipSign(term.lo, term_sign));
        if (++t == end) break;
        const int bit = __ffs(static_cast<int>(t)) - 1;
        const uint64_t step_sign = StepAdds(begin, t, bit) ? 0 : kSignBit;
        const double* s = steps + bit * N;
        if constexpr (kBlocks) {
          const uint64_t mask = static_cast<uint64_t>(__double_as_longlong(masks[bit]));
          products.template Refresh<true>(r, mask, s, step_sign);
        } else {
#pragma unroll
          for (int i = 0; i < N; ++i) r[i].Update(FlipSign(s[i], step_sign));
        }
      }
    }
  }
  sum = BlockReduce<kWalkThreads>(sum, RealCombine{});
  if (threadIdx.x == 0) data.partials[block] = sum;
}

template <int N>
__global__ void __launch_bounds__(kWalkThreads) WalkKernel(WalkSlice slice, ComplexWalkData data) {
  // The base follows the steps in shared memory and is read through a volatile pointer at each
  // restart: the compiler would otherwise keep all 2N values in registers across the segments,
  // which spills at N = 36.
  const double2* steps = StageSteps(data.steps, slice.bits * N + N);
  const volatile double2* base = steps + slice.bits * N;
  const int64_t block = slice.first_block + blockIdx.x;
  const uint64_t thread = static_cast<uint64_t>(block) * kWalkThreads + threadIdx.x;
  ComplexDoubleDouble sum{{0.0, 0.0}, {0.0, 0.0}};
  if (thread < slice.threads) {
    const uint64_t begin = thread << slice.chunk_log2;
    const uint32_t length = 1u << slice.chunk_log2;
    const int segment_log2 =
        slice.chunk_log2 < kComplexSegmentLog2 ? slice.chunk_log2 : kComplexSegmentLog2;
    const uint32_t segment = 1u << segment_log2;
    double re[N];
    double im[N];
    for (uint32_t first = 0; first < length; first += segment) {
      // Restart: the row sums of GrayCode(begin + first) from scratch, in the CPU's order.
#pragma unroll
      for (int i = 0; i < N; ++i) {
        re[i] = base[i].x;
        im[i] = base[i].y;
      }
      const uint64_t gray = GrayCodeOf(begin + first);
      for (int b = FirstStartBit(segment_log2); b < slice.bits; ++b) {
        const double2* s = steps + b * N;
        const bool set = ((gray >> b) & 1) != 0;
#pragma unroll
        for (int i = 0; i < N; ++i) {
          re[i] += set ? s[i].x : 0.0;
          im[i] += set ? s[i].y : 0.0;
        }
      }
      const uint32_t end = first + segment;
      for (uint32_t t = first;;) {
        const double2 term = ComplexProduct<N>(re, im);
        const uint64_t term_sign = ((begin + t) & 1) != 0 ? kSignBit : 0;
        sum.re = AddDd(sum.re, FlipSign(term.x, term_sign), 0.0);
        sum.im = AddDd(sum.im, FlipSign(term.y, term_sign), 0.0);
        if (++t == end) break;
        const int bit = __ffs(static_cast<int>(t)) - 1;
        const uint64_t step_sign = StepAdds(begin, t, bit) ? 0 : kSignBit;
        const double2* s = steps + bit * N;
#pragma unroll
        for (int i = 0; i < N; ++i) {
          re[i] += FlipSign(s[i].x, step_sign);
          im[i] += FlipSign(s[i].y, step_sign);
        }
      }
    }
  }
  sum = BlockReduce<kWalkThreads>(sum, ComplexCombine{});
  if (threadIdx.x == 0) data.partials[block] = sum;
}

template <int N>
__global__ void __launch_bounds__(kWalkThreads) WalkKernel(WalkSlice slice, ModularWalkData data) {
  const uint64_t* steps = StageSteps(data.steps, slice.bits * N);
  const int64_t block = slice.first_block + blockIdx.x;
  const uint64_t thread = static_cast<uint64_t>(block) * kWalkThreads + threadIdx.x;
  const uint64_t p = data.p;
  uint64_t sum = 0;
  if (thread < slice.threads) {
    const uint64_t begin = thread << slice.chunk_log2;
    uint64_t r[N];
#pragma unroll
    for (int i = 0; i < N; ++i) r[i] = data.base[i];
    const uint64_t gray = GrayCodeOf(begin);
    for (int b = FirstStartBit(slice.chunk_log2); b < slice.bits; ++b) {
      const uint64_t* s = steps + b * N;
      const bool set = ((gray >> b) & 1) != 0;
#pragma unroll
      for (int i = 0; i < N; ++i) r[i] = AddModP(r[i], set ? s[i] : 0, p);
    }
    const uint32_t length = 1u << slice.chunk_log2;
    for (uint32_t t = 0;;) {
      const uint64_t term = ModularProduct<N>(r, p, data.neg_inverse);
      sum = ((begin + t) & 1) != 0 ? SubModP(sum, term, p) : AddModP(sum, term, p);
      if (++t == length) break;
      const int bit = __ffs(static_cast<int>(t)) - 1;
      const uint64_t* s = steps + bit * N;
      if (StepAdds(begin, t, bit)) {
#pragma unroll
        for (int i = 0; i < N; ++i) r[i] = AddModP(r[i], s[i], p);
      } else {
#pragma unroll
        for (int i = 0; i < N; ++i) r[i] = SubModP(r[i], s[i], p);
      }
    }
  }
  sum = BlockReduce<kWalkThreads>(sum, ModularCombine{p});
  if (threadIdx.x == 0) data.partials[block] = sum;
}

// *out = the combination of partials[0, count) in index order (per thread, then a fixed tree).
template <typename T, typename Combine>
__global__ void __launch_bounds__(kReduceThreads)
    ReducePartialsKernel(const T* partials, int64_t count, Combine combine, T* out) {
  T value{};
  for (int64_t q = threadIdx.x; q < count; q += kReduceThreads) value = combine(value, partials[q]);
  value = BlockReduce<kReduceThreads>(value, combine);
  if (threadIdx.x == 0) *out = value;
}

// ---- Launchers. Each queues its kernel on `stream` and returns the launch status. ----

// Calls f(std::integral_constant<int, N>{}) for the padded order N == padded_order.
// REQUIRES: padded_order a multiple of kOrderStep in [N, kMaxWalkOrder] (N: the smallest order
// the walk is instantiated for, Data::kMinOrder).
template <int N, typename F>
cudaError_t DispatchPaddedOrder(int padded_order, F&& f) {
  if constexpr (N >= kMaxWalkOrder) {
    return f(std::integral_constant<int, kMaxWalkOrder>{});
  } else {
    if (padded_order <= N) return f(std::integral_constant<int, N>{});
    return DispatchPaddedOrder<N + kOrderStep>(padded_order, static_cast<F&&>(f));
  }
}

template <typename Data>
size_t WalkSharedBytes(int bits, int padded_order) {
  return static_cast<size_t>(bits + Data::kExtraSteps) * padded_order * sizeof(typename Data::Step);
}

// Blocks [slice.first_block, slice.first_block + blocks) of the walk.
template <typename Data>
cudaError_t LaunchWalk(int padded_order, const WalkSlice& slice, int64_t blocks, const Data& data,
                       cudaStream_t stream) {
  return DispatchPaddedOrder<Data::kMinOrder>(padded_order, [&](auto order) {
    constexpr int kOrder = decltype(order)::value;
    WalkKernel<kOrder><<<static_cast<unsigned>(blocks), kWalkThreads,
                         WalkSharedBytes<Data>(slice.bits, kOrder), stream>>>(slice, data);
    return cudaGetLastError();
  });
}

// How many blocks of the walk kernel fit on one multiprocessor at once.
template <typename Data>
cudaError_t WalkBlocksPerMultiprocessor(int padded_order, int bits, int* blocks) {
  return DispatchPaddedOrder<Data::kMinOrder>(padded_order, [&](auto order) {
    constexpr int kOrder = decltype(order)::value;
    void (*kernel)(WalkSlice, Data) = WalkKernel<kOrder>;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kernel, kWalkThreads,
                                                         WalkSharedBytes<Data>(bits, kOrder));
  });
}

// *out = the sum of the walk's `count` block partials.
template <typename Data>
cudaError_t LaunchReducePartials(const Data& data, int64_t count, typename Data::Partial* out,
                                 cudaStream_t stream) {
  ReducePartialsKernel<<<1, kReduceThreads, 0, stream>>>(data.partials, count, CombineOf(data),
                                                         out);
  return cudaGetLastError();
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_PERMANENT_WALKS_CUH_
