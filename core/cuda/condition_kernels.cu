#include <cfloat>
#include <complex>
#include <cstdint>
#include <type_traits>

#include "core/condition_estimate_start.h"
#include "core/cuda/condition_kernels.h"
#include "core/cuda/device_element.cuh"

namespace matrixd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpSize = 32;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int64_t kMaxBlocks = 1024;

template <typename E>
__device__ __forceinline__ E FromReal(double v);
template <>
__device__ __forceinline__ float FromReal<float>(double v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ double FromReal<double>(double v) {
  return v;
}
template <>
__device__ __forceinline__ float2 FromReal<float2>(double v) {
  return make_float2(static_cast<float>(v), 0.0f);
}
template <>
__device__ __forceinline__ double2 FromReal<double2>(double v) {
  return make_double2(v, 0.0);
}

// The host block's UnitOf (core/condition_estimate.cc).
__device__ __forceinline__ float Sign(float x) { return x >= 0.0f ? 1.0f : -1.0f; }
__device__ __forceinline__ double Sign(double x) { return x >= 0.0 ? 1.0 : -1.0; }
__device__ __forceinline__ double2 Sign(double2 z) {
  const double magnitude = hypot(z.x, z.y);
  return magnitude > DBL_MIN ? make_double2(z.x / magnitude, z.y / magnitude)
                             : make_double2(1.0, 0.0);
}
__device__ __forceinline__ float2 Sign(float2 z) {
  const double2 unit = Sign(make_double2(z.x, z.y));
  return make_float2(static_cast<float>(unit.x), static_cast<float>(unit.y));
}

__device__ __forceinline__ float Scaled(float x, double s) { return static_cast<float>(x * s); }
__device__ __forceinline__ double Scaled(double x, double s) { return x * s; }
__device__ __forceinline__ float2 Scaled(float2 z, double s) {
  return make_float2(static_cast<float>(z.x * s), static_cast<float>(z.y * s));
}
__device__ __forceinline__ double2 Scaled(double2 z, double s) {
  return make_double2(z.x * s, z.y * s);
}

__device__ __forceinline__ double AsDouble(float x) { return x; }
__device__ __forceinline__ double AsDouble(double x) { return x; }

// The block-wide sum of every thread's `value` in a fixed order (warp shuffles, then warp 0's
// partial sums in order), valid in thread 0. Uses `partial` (kWarps doubles of shared memory).
__device__ double BlockSum(double value, double* partial) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value += __shfl_down_sync(0xffffffffu, value, offset);
  }
  if (threadIdx.x % kWarpSize == 0) partial[threadIdx.x / kWarpSize] = value;
  __syncthreads();
  double total = 0.0;
  if (threadIdx.x == 0) {
    for (int w = 0; w < kWarps; ++w) total += partial[w];
  }
  __syncthreads();
  return total;
}

unsigned BlocksFor(int64_t elements) {
  const int64_t blocks = (elements + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

template <typename E>
__global__ void __launch_bounds__(kThreads)
    StartKernel(E* __restrict__ x, int64_t n, int t, double scale) {
  for (int64_t k = blockIdx.x * int64_t{kThreads} + threadIdx.x; k < n * t;
       k += int64_t{gridDim.x} * kThreads) {
    x[k] = FromReal<E>(scale * StartingEntry(n, k % n, static_cast<int>(k / n)));
  }
}

template <typename E>
__global__ void __launch_bounds__(kThreads)
    UnitColumnsKernel(E* __restrict__ x, int64_t n, int t, EstimateRows rows, double scale) {
  for (int64_t k = blockIdx.x * int64_t{kThreads} + threadIdx.x; k < n * t;
       k += int64_t{gridDim.x} * kThreads) {
    const int64_t i = k % n;
    const int j = static_cast<int>(k / n);
    x[k] = FromReal<E>(i == rows.row[j] ? scale : 0.0);
  }
}

// Blocks [0, t): column j's 1-norm, and its signs into s. Real E, with products: blocks
// [t, t + 2 t^2) the sign products of SignProductsKernel below, with the new signs taken from x
// itself (the same +-1 the first blocks write), so that one launch follows the solve.
template <typename E>
__global__ void __launch_bounds__(kThreads)
    SolveSummaryKernel(const E* __restrict__ x, const E* __restrict__ s_old, int64_t n, int t,
                       double* __restrict__ norms, E* __restrict__ s,
                       double* __restrict__ products) {
  __shared__ double partial[kWarps];
  const int b = static_cast<int>(blockIdx.x);
  double sum = 0.0;
  if (b < t) {
    const int64_t offset = b * n;
    for (int64_t i = threadIdx.x; i < n; i += kThreads) {
      const E v = x[offset + i];
      sum += Magnitude(v);
      s[offset + i] = Sign(v);
    }
    sum = BlockSum(sum, partial);
    if (threadIdx.x == 0) norms[b] = sum;
    return;
  }
  if constexpr (std::is_floating_point_v<E>) {
    const int p = b - t;
    const int i = (p % (t * t)) / t;
    const int j = p % t;
    const E* a = x + i * n;
    const bool against_old = p < t * t;
    const E* other = (against_old ? s_old : x) + j * n;
    for (int64_t r = threadIdx.x; r < n; r += kThreads) {
      const double o = against_old ? AsDouble(other[r]) : AsDouble(Sign(other[r]));
      sum += AsDouble(Sign(a[r])) * o;
    }
    sum = BlockSum(sum, partial);
    if (threadIdx.x == 0) products[p] = sum;
  }
}

// One block per product: blocks [0, t^2) against s_old, [t^2, 2 t^2) against s.
template <typename E>
__global__ void __launch_bounds__(kThreads)
    SignProductsKernel(const E* __restrict__ s, const E* __restrict__ s_old, int64_t n, int t,
                       double* __restrict__ products) {
  __shared__ double partial[kWarps];
  const int b = blockIdx.x;
  const int i = (b % (t * t)) / t;
  const int j = b % t;
  const E* a = s + i * n;
  const E* other = (b < t * t ? s_old : s) + j * n;
  double sum = 0.0;
  for (int64_t r = threadIdx.x; r < n; r += kThreads) sum += AsDouble(a[r]) * AsDouble(other[r]);
  sum = BlockSum(sum, partial);
  if (threadIdx.x == 0) products[b] = sum;
}

template <typename E>
__global__ void __launch_bounds__(kThreads)
    ResampleKernel(E* __restrict__ s, int64_t n, int column, uint64_t draw) {
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * kThreads) {
    s[column * n + i] = FromReal<E>(RandomSign(draw, static_cast<uint64_t>(i)));
  }
}

template <typename E>
__global__ void __launch_bounds__(kThreads)
    ScaledCopyKernel(const E* __restrict__ s, E* __restrict__ x, int64_t elements, double scale) {
  for (int64_t k = blockIdx.x * int64_t{kThreads} + threadIdx.x; k < elements;
       k += int64_t{gridDim.x} * kThreads) {
    x[k] = Scaled(s[k], scale);
  }
}

// h_i := max_j |x(i, j)|, NaN when any is NaN.
template <typename E>
__device__ __forceinline__ double RowMaximum(const E* __restrict__ x, int64_t n, int t, int64_t i) {
  double value = 0.0;
  for (int j = 0; j < t; ++j) {
    const double magnitude = Magnitude(x[j * n + i]);
    value = isnan(magnitude) || isnan(value) ? magnitude + value : fmax(value, magnitude);
  }
  return value;
}

// The host block's RanksBefore: larger first, NaN below every number, ties to the lower row.
// Exhausted lists offer value -2 (below NaN's key -1).
__device__ __forceinline__ bool RanksBefore(double va, int64_t ra, double vb, int64_t rb) {
  const double ka = isnan(va) ? -1.0 : va;
  const double kb = isnan(vb) ? -1.0 : vb;
  return ka != kb ? ka > kb : ra < rb;
}

// One block: every thread keeps the `count` best of its rows (strided, so in increasing row
// order; h_i taken from x as it goes, so that no other kernel runs between the solve and the
// download), then `count` rounds each pick the best of the threads' heads (warp shuffles, then
// the warps' winners in order).
template <typename E>
__global__ void __launch_bounds__(kThreads)
    LargestRowsKernel(const E* __restrict__ x, int64_t n, int t, int count, EstimateRows at_rows,
                      double* __restrict__ values, int64_t* __restrict__ rows,
                      double* __restrict__ at) {
  __shared__ double warp_value[kWarps];
  __shared__ int64_t warp_row[kWarps];
  __shared__ int64_t winner;
  double v[kMaxEstimateRanked];
  int64_t r[kMaxEstimateRanked];
  int size = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const double value = RowMaximum(x, n, t, i);
    if (size == count && !RanksBefore(value, i, v[count - 1], r[count - 1])) continue;
    int p = size < count ? size++ : count - 1;
    while (p > 0 && RanksBefore(value, i, v[p - 1], r[p - 1])) {
      v[p] = v[p - 1];
      r[p] = r[p - 1];
      --p;
    }
    v[p] = value;
    r[p] = i;
  }
  int head = 0;
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  for (int round = 0; round < count; ++round) {
    double best_value = head < size ? v[head] : -2.0;
    int64_t best_row = head < size ? r[head] : INT64_MAX;
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
      const double other_value = __shfl_down_sync(0xffffffffu, best_value, offset);
      const int64_t other_row = __shfl_down_sync(0xffffffffu, best_row, offset);
      if (RanksBefore(other_value, other_row, best_value, best_row)) {
        best_value = other_value;
        best_row = other_row;
      }
    }
    if (lane == 0) {
      warp_value[warp] = best_value;
      warp_row[warp] = best_row;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kWarps; ++w) {
        if (RanksBefore(warp_value[w], warp_row[w], best_value, best_row)) {
          best_value = warp_value[w];
          best_row = warp_row[w];
        }
      }
      values[round] = best_value;
      rows[round] = best_row;
      winner = best_row;
    }
    __syncthreads();
    if (head < size && r[head] == winner) ++head;
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    for (int j = 0; j < at_rows.count; ++j) at[j] = RowMaximum(x, n, t, at_rows.row[j]);
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchEstimateStart(T* x, int64_t n, int t, double scale, cudaStream_t stream) {
  using E = DeviceType<T>;
  StartKernel<E><<<BlocksFor(n * t), kThreads, 0, stream>>>(reinterpret_cast<E*>(x), n, t, scale);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchEstimateUnitColumns(T* x, int64_t n, int t, EstimateRows rows, double scale,
                                      cudaStream_t stream) {
  using E = DeviceType<T>;
  UnitColumnsKernel<E>
      <<<BlocksFor(n * t), kThreads, 0, stream>>>(reinterpret_cast<E*>(x), n, t, rows, scale);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchEstimateSolveSummary(const T* x, const T* s_old, int64_t n, int t, double* norms,
                                       T* s, double* products, cudaStream_t stream) {
  using E = DeviceType<T>;
  constexpr bool kReal = std::is_floating_point_v<E>;
  const int blocks = kReal && products != nullptr ? t + 2 * t * t : t;
  SolveSummaryKernel<E><<<blocks, kThreads, 0, stream>>>(reinterpret_cast<const E*>(x),
                                                         reinterpret_cast<const E*>(s_old), n, t,
                                                         norms, reinterpret_cast<E*>(s), products);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchEstimateSignProducts(const T* s, const T* s_old, int64_t n, int t,
                                       double* products, cudaStream_t stream) {
  SignProductsKernel<T><<<2 * t * t, kThreads, 0, stream>>>(s, s_old, n, t, products);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchEstimateResample(T* s, int64_t n, int column, uint64_t draw,
                                   cudaStream_t stream) {
  ResampleKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(s, n, column, draw);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchEstimateScaledCopy(const T* s, T* x, int64_t elements, double scale,
                                     cudaStream_t stream) {
  using E = DeviceType<T>;
  ScaledCopyKernel<E><<<BlocksFor(elements), kThreads, 0, stream>>>(
      reinterpret_cast<const E*>(s), reinterpret_cast<E*>(x), elements, scale);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchEstimateLargestRows(const T* x, int64_t n, int t, int count, EstimateRows at_rows,
                                      double* values, int64_t* rows, double* at,
                                      cudaStream_t stream) {
  using E = DeviceType<T>;
  LargestRowsKernel<E><<<1, kThreads, 0, stream>>>(reinterpret_cast<const E*>(x), n, t, count,
                                                   at_rows, values, rows, at);
  return cudaGetLastError();
}

#define MATRIXD_INSTANTIATE_ESTIMATE_KERNELS(T)                                                  \
  template cudaError_t LaunchEstimateStart<T>(T*, int64_t, int, double, cudaStream_t);           \
  template cudaError_t LaunchEstimateUnitColumns<T>(T*, int64_t, int, EstimateRows, double,      \
                                                    cudaStream_t);                               \
  template cudaError_t LaunchEstimateSolveSummary<T>(const T*, const T*, int64_t, int, double*,  \
                                                     T*, double*, cudaStream_t);                 \
  template cudaError_t LaunchEstimateScaledCopy<T>(const T*, T*, int64_t, double, cudaStream_t); \
  template cudaError_t LaunchEstimateLargestRows<T>(const T*, int64_t, int, int, EstimateRows,   \
                                                    double*, int64_t*, double*, cudaStream_t);
MATRIXD_INSTANTIATE_ESTIMATE_KERNELS(float)
MATRIXD_INSTANTIATE_ESTIMATE_KERNELS(double)
MATRIXD_INSTANTIATE_ESTIMATE_KERNELS(std::complex<float>)
MATRIXD_INSTANTIATE_ESTIMATE_KERNELS(std::complex<double>)
#undef MATRIXD_INSTANTIATE_ESTIMATE_KERNELS
template cudaError_t LaunchEstimateSignProducts<float>(const float*, const float*, int64_t, int,
                                                       double*, cudaStream_t);
template cudaError_t LaunchEstimateSignProducts<double>(const double*, const double*, int64_t, int,
                                                        double*, cudaStream_t);
template cudaError_t LaunchEstimateResample<float>(float*, int64_t, int, uint64_t, cudaStream_t);
template cudaError_t LaunchEstimateResample<double>(double*, int64_t, int, uint64_t, cudaStream_t);

}  // namespace matrixd::cuda
