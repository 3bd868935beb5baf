#include <algorithm>
#include <cmath>

#include "core/cuda/refine_kernels.h"

namespace matrixd::cuda {
namespace {

constexpr int kThreads = 256;

// A double-double value hi + lo (|lo| <= ulp(hi) / 2), as core/cpu/compensated_sum.h.
struct DoubleDouble {
  double hi = 0.0;
  double lo = 0.0;
};

// Adds the unevaluated sum hi + lo: TwoSum, then FastTwoSum to renormalise (Knuth, Dekker).
__device__ __forceinline__ DoubleDouble Add(DoubleDouble x, double hi, double lo) {
  const double s = x.hi + hi;
  const double v = s - x.hi;
  double e = (x.hi - (s - v)) + (hi - v);
  e += x.lo + lo;
  const double h = s + e;
  return {h, e - (h - s)};
}

// Adds a * b exactly: the product's rounding error recovered with an FMA (TwoProd).
__device__ __forceinline__ DoubleDouble AddProduct(DoubleDouble x, double a, double b) {
  const double p = a * b;
  return Add(x, p, fma(a, b, -p));
}

// One block per row i: for each right-hand side c, the threads sum strided slices of the row's
// products, then a fixed binary tree in shared memory combines the kThreads partials.
template <typename R, int kParts>
__global__ void RefineResidualKernel(const R* __restrict__ a, const R* __restrict__ x,
                                     const R* __restrict__ b, R* __restrict__ r,
                                     double* __restrict__ row_norms, int64_t n, int64_t nrhs) {
  __shared__ double hi[kParts][kThreads];
  __shared__ double lo[kParts][kThreads];
  const int64_t i = blockIdx.x;
  const int t = threadIdx.x;
  const R* a_i = a + i * n * kParts;
  double row_norm = 0.0;
  for (int64_t c = 0; c < nrhs; ++c) {
    const R* x_c = x + c * n * kParts;
    DoubleDouble sum[kParts];
    for (int64_t j = t; j < n; j += kThreads) {
      if constexpr (kParts == 1) {
        sum[0] = AddProduct(sum[0], -static_cast<double>(a_i[j]), static_cast<double>(x_c[j]));
      } else {
        const double ar = a_i[2 * j], ai = a_i[2 * j + 1];
        const double xr = x_c[2 * j], xi = x_c[2 * j + 1];
        sum[0] = AddProduct(sum[0], -ar, xr);
        sum[0] = AddProduct(sum[0], ai, xi);
        sum[1] = AddProduct(sum[1], -ar, xi);
        sum[1] = AddProduct(sum[1], -ai, xr);
      }
    }
    for (int p = 0; p < kParts; ++p) {
      hi[p][t] = sum[p].hi;
      lo[p][t] = sum[p].lo;
    }
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
      if (t < stride) {
        for (int p = 0; p < kParts; ++p) {
          const DoubleDouble combined =
              Add({hi[p][t], lo[p][t]}, hi[p][t + stride], lo[p][t + stride]);
          hi[p][t] = combined.hi;
          lo[p][t] = combined.lo;
        }
      }
      __syncthreads();
    }
    if (t == 0) {
      double magnitude = 0.0;
      for (int p = 0; p < kParts; ++p) {
        const int64_t e = (c * n + i) * kParts + p;
        const DoubleDouble total = Add({hi[p][0], lo[p][0]}, static_cast<double>(b[e]), 0.0);
        const double value = total.hi + total.lo;
        r[e] = static_cast<R>(value);
        magnitude = kParts == 1 ? fabs(value) : hypot(magnitude, value);
      }
      row_norm += magnitude;
    }
    __syncthreads();
  }
  if (t == 0) row_norms[i] = row_norm;
}

template <typename R, int kParts>
__global__ void RowAbsSumsKernel(const R* __restrict__ a, int64_t cols,
                                 double* __restrict__ row_sums) {
  __shared__ double partial[kThreads];
  const int64_t i = blockIdx.x;
  const int t = threadIdx.x;
  const R* a_i = a + i * cols * kParts;
  double sum = 0.0;
  for (int64_t j = t; j < cols; j += kThreads) {
    if constexpr (kParts == 1) {
      sum += fabs(static_cast<double>(a_i[j]));
    } else {
      sum += hypot(static_cast<double>(a_i[2 * j]), static_cast<double>(a_i[2 * j + 1]));
    }
  }
  partial[t] = sum;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) row_sums[i] = partial[0];
}

template <typename R>
__global__ void AddInPlaceKernel(R* __restrict__ x, const R* __restrict__ d, int64_t count) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < count;
       e += int64_t{gridDim.x} * blockDim.x) {
    x[e] += d[e];
  }
}

}  // namespace

template <typename R>
cudaError_t LaunchRefineResidual(const R* a, const R* x, const R* b, R* r, double* row_norms,
                                 int64_t n, int64_t nrhs, int parts, cudaStream_t stream) {
  if (n <= 0 || nrhs <= 0) return cudaSuccess;
  if (parts == 1) {
    RefineResidualKernel<R, 1>
        <<<static_cast<unsigned>(n), kThreads, 0, stream>>>(a, x, b, r, row_norms, n, nrhs);
  } else {
    RefineResidualKernel<R, 2>
        <<<static_cast<unsigned>(n), kThreads, 0, stream>>>(a, x, b, r, row_norms, n, nrhs);
  }
  return cudaGetLastError();
}

template <typename R>
cudaError_t LaunchRowAbsSums(const R* a, int64_t rows, int64_t cols, int parts, double* row_sums,
                             cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  if (parts == 1) {
    RowAbsSumsKernel<R, 1><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(a, cols, row_sums);
  } else {
    RowAbsSumsKernel<R, 2><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(a, cols, row_sums);
  }
  return cudaGetLastError();
}

template <typename R>
cudaError_t LaunchAddInPlace(R* x, const R* d, int64_t count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 4096);
  AddInPlaceKernel<R><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, d, count);
  return cudaGetLastError();
}

template cudaError_t LaunchRefineResidual<float>(const float*, const float*, const float*, float*,
                                                 double*, int64_t, int64_t, int, cudaStream_t);
template cudaError_t LaunchRefineResidual<double>(const double*, const double*, const double*,
                                                  double*, double*, int64_t, int64_t, int,
                                                  cudaStream_t);
template cudaError_t LaunchRowAbsSums<float>(const float*, int64_t, int64_t, int, double*,
                                             cudaStream_t);
template cudaError_t LaunchRowAbsSums<double>(const double*, int64_t, int64_t, int, double*,
                                              cudaStream_t);
template cudaError_t LaunchAddInPlace<float>(float*, const float*, int64_t, cudaStream_t);
template cudaError_t LaunchAddInPlace<double>(double*, const double*, int64_t, cudaStream_t);

}  // namespace matrixd::cuda
