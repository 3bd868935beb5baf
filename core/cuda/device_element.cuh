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

// |x| in double (for float and float2 too, so sums of many magnitudes lose nothing to float).
__device__ __forceinline__ double Magnitude(float x) { return fabs(static_cast<double>(x)); }
__device__ __forceinline__ double Magnitude(double x) { return fabs(x); }
__device__ __forceinline__ double Magnitude(float2 z) { return hypot(double{z.x}, double{z.y}); }
__device__ __forceinline__ double Magnitude(double2 z) { return hypot(z.x, z.y); }

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DEVICE_ELEMENT_CUH_
