// The device element types of the four floating host types, and the arithmetic that kernels
// templated on them share. DeviceType<T> is T for float and double, and float2 / double2 for
// std::complex<float> / std::complex<double> (same layout, so a host pointer is reinterpreted, not
// copied); on float2 / double2 the functions below are complex arithmetic (x real, y imaginary).
// Included by .cu files only.
#ifndef MATRIXD_CORE_CUDA_DEVICE_ELEMENT_CUH_
#define MATRIXD_CORE_CUDA_DEVICE_ELEMENT_CUH_

#include <cuda_runtime.h>

#include <complex>

namespace matrixd::cuda {

template <typename T>
struct DeviceOf {
  using type = T;
};
template <>
struct DeviceOf<std::complex<float>> {
  using type = float2;
};
template <>
struct DeviceOf<std::complex<double>> {
  using type = double2;
};
template <typename T>
using DeviceType = typename DeviceOf<T>::type;

// 0 and 1 of element type E.
template <typename E>
__device__ __forceinline__ E Zero() {
  return E{};
}
template <typename E>
__device__ __forceinline__ E One();
template <>
__device__ __forceinline__ float One<float>() {
  return 1.0f;
}
template <>
__device__ __forceinline__ double One<double>() {
  return 1.0;
}
template <>
__device__ __forceinline__ float2 One<float2>() {
  return make_float2(1.0f, 0.0f);
}
template <>
__device__ __forceinline__ double2 One<double2>() {
  return make_double2(1.0, 0.0);
}

// The complex conjugate (the value itself for real types).
__device__ __forceinline__ float Conj(float x) { return x; }
__device__ __forceinline__ double Conj(double x) { return x; }
__device__ __forceinline__ float2 Conj(float2 z) { return make_float2(z.x, -z.y); }
__device__ __forceinline__ double2 Conj(double2 z) { return make_double2(z.x, -z.y); }

// a + b and a - b.
__device__ __forceinline__ float Add(float a, float b) { return a + b; }
__device__ __forceinline__ double Add(double a, double b) { return a + b; }
__device__ __forceinline__ float2 Add(float2 a, float2 b) {
  return make_float2(a.x + b.x, a.y + b.y);
}
__device__ __forceinline__ double2 Add(double2 a, double2 b) {
  return make_double2(a.x + b.x, a.y + b.y);
}
__device__ __forceinline__ float Sub(float a, float b) { return a - b; }
__device__ __forceinline__ double Sub(double a, double b) { return a - b; }
__device__ __forceinline__ float2 Sub(float2 a, float2 b) {
  return make_float2(a.x - b.x, a.y - b.y);
}
__device__ __forceinline__ double2 Sub(double2 a, double2 b) {
  return make_double2(a.x - b.x, a.y - b.y);
}

// c + a b (fused for real types; a complex product as four fused real steps).
__device__ __forceinline__ float MulAdd(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double MulAdd(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ float2 MulAdd(float2 a, float2 b, float2 c) {
  return make_float2(fmaf(-a.y, b.y, fmaf(a.x, b.x, c.x)), fmaf(a.y, b.x, fmaf(a.x, b.y, c.y)));
}
__device__ __forceinline__ double2 MulAdd(double2 a, double2 b, double2 c) {
  return make_double2(fma(-a.y, b.y, fma(a.x, b.x, c.x)), fma(a.y, b.x, fma(a.x, b.y, c.y)));
}

// |x|^2 in double (for float and float2 too: a float's square never overflows a double).
__device__ __forceinline__ double SquaredMagnitude(float x) {
  const double d = x;
  return d * d;
}
__device__ __forceinline__ double SquaredMagnitude(double x) { return x * x; }
__device__ __forceinline__ double SquaredMagnitude(float2 z) {
  const double re = z.x;
  const double im = z.y;
  return fma(re, re, im * im);
}
__device__ __forceinline__ double SquaredMagnitude(double2 z) { return fma(z.x, z.x, z.y * z.y); }

// `shuffle` (a warp shuffle of one float or double) applied to v, part by part for the complex
// types.
template <typename PartShuffle>
__device__ __forceinline__ float ShufflePartwise(float v, PartShuffle shuffle) {
  return shuffle(v);
}
template <typename PartShuffle>
__device__ __forceinline__ double ShufflePartwise(double v, PartShuffle shuffle) {
  return shuffle(v);
}
template <typename PartShuffle>
__device__ __forceinline__ float2 ShufflePartwise(float2 v, PartShuffle shuffle) {
  return make_float2(shuffle(v.x), shuffle(v.y));
}
template <typename PartShuffle>
__device__ __forceinline__ double2 ShufflePartwise(double2 v, PartShuffle shuffle) {
  return make_double2(shuffle(v.x), shuffle(v.y));
}

// Lane i + offset's v in lane i (of a full warp), as __shfl_down_sync, for the four types.
template <typename E>
__device__ __forceinline__ E ShuffleDown(E v, int offset) {
  return ShufflePartwise(
      v, [offset](auto part) { return __shfl_down_sync(0xffffffffu, part, offset); });
}

// Lane `source`'s v, in every lane of a full warp, for the four types.
template <typename E>
__device__ __forceinline__ E Shuffle(E v, int source) {
  return ShufflePartwise(v, [source](auto part) { return __shfl_sync(0xffffffffu, part, source); });
}

// Lane 0 gets the sum of v over the warp's 32 lanes, in a fixed order (a tree of shuffles).
template <typename E>
__device__ __forceinline__ E WarpSum(E v) {
  for (int offset = 16; offset > 0; offset /= 2) v = Add(v, ShuffleDown(v, offset));
  return v;
}

// Thread 0 of a one-dimensional block of kThreads threads (a multiple of 32) gets the sum of v
// over the block, in a fixed order: each warp's WarpSum, then the warps' sums in warp order.
// `warp_sums` is kThreads / 32 values of shared memory. Every thread must call it (it holds a
// __syncthreads()); warp_sums may be written again only after another __syncthreads().
template <int kThreads, typename E>
__device__ __forceinline__ E BlockSum(E v, E* warp_sums) {
  static_assert(kThreads % 32 == 0);
  v = WarpSum(v);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  E total = Zero<E>();
  if (threadIdx.x == 0) {
    for (int w = 0; w < kThreads / 32; ++w) total = Add(total, warp_sums[w]);
  }
  return total;
}

// |x| in double (for float and float2 too, so sums of many magnitudes lose nothing to float).
__device__ __forceinline__ double Magnitude(float x) { return fabs(static_cast<double>(x)); }
__device__ __forceinline__ double Magnitude(double x) { return fabs(x); }
__device__ __forceinline__ double Magnitude(float2 z) { return hypot(double{z.x}, double{z.y}); }
__device__ __forceinline__ double Magnitude(double2 z) { return hypot(z.x, z.y); }

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DEVICE_ELEMENT_CUH_
