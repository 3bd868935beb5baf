#include <algorithm>

#include "core/cuda/dense_kernels.h"
#include "core/cuda/device_element.cuh"
#include "core/cuda/element_bits.cuh"
#include "core/cuda/transpose_tile.cuh"

namespace matrixd::cuda {
namespace {

// ---- Transpose ----

constexpr int kTile = kTransposeTile;
constexpr int kTileRowsPerPass = kTransposeTileRowsPerPass;
// Enough blocks to fill any current GPU several times over; larger matrices loop (grid-stride).
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

// One tile per step (grid-stride over tiles), TransposeTile's way.
template <typename E>
__global__ void TransposeKernel(const E* __restrict__ src, int64_t rows, int64_t cols,
                                int64_t src_ld, E* __restrict__ dst, int64_t dst_ld,
                                int64_t row_tiles, int64_t tiles) {
  __shared__ E tile[kTile][kTile + 1];
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    TransposeTile(src, rows, cols, src_ld, dst, dst_ld, (t % row_tiles) * kTile,
                  (t / row_tiles) * kTile, tile, [](const E&) {});
  }
}

template <typename E>
cudaError_t Transpose(const void* src, int64_t rows, int64_t cols, int64_t src_ld, void* dst,
                      int64_t dst_ld, cudaStream_t stream) {
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int64_t tiles = row_tiles * ((cols + kTile - 1) / kTile);
  if (tiles == 0) return cudaSuccess;
  const dim3 block(kTile, kTileRowsPerPass);
  const unsigned blocks = static_cast<unsigned>(std::min(tiles, kMaxBlocks));
  TransposeKernel<E><<<blocks, block, 0, stream>>>(static_cast<const E*>(src), rows, cols, src_ld,
                                                   static_cast<E*>(dst), dst_ld, row_tiles, tiles);
  return cudaGetLastError();
}

// ---- Element-wise ----

constexpr int kElementwiseThreads = 256;

unsigned ElementwiseBlocks(int64_t count) {
  return static_cast<unsigned>(
      std::clamp<int64_t>((count + kElementwiseThreads - 1) / kElementwiseThreads, 1, kMaxBlocks));
}

// Four independent 16-byte loads before the first store keep enough bytes in flight per thread
// to approach the memory's bandwidth.
__global__ void CopyKernel(const uint4* __restrict__ src, uint4* __restrict__ dst, int64_t count) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  for (; i + 3 * stride < count; i += 4 * stride) {
    const uint4 a = src[i];
    const uint4 b = src[i + stride];
    const uint4 c = src[i + 2 * stride];
    const uint4 d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < count; i += stride) dst[i] = src[i];
}

template <typename E>
__global__ void ZeroStrictTriangleKernel(E* data, int64_t rows, int64_t cols, bool upper) {
  const int64_t count = rows * cols;
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < count;
       k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = k / cols;
    const int64_t c = k - r * cols;
    if (upper ? c > r : c < r) data[k] = E{};
  }
}

template <typename E>
cudaError_t ZeroStrictTriangle(void* data, int64_t rows, int64_t cols, bool upper,
                               cudaStream_t stream) {
  if (rows * cols == 0) return cudaSuccess;
  ZeroStrictTriangleKernel<E><<<ElementwiseBlocks(rows * cols), kElementwiseThreads, 0, stream>>>(
      static_cast<E*>(data), rows, cols, upper);
  return cudaGetLastError();
}

// ---- Element types ----

// Every element type read as a complex double (imaginary part 0 for the real types).
__device__ __forceinline__ double2 Widen(float x) { return make_double2(x, 0.0); }
__device__ __forceinline__ double2 Widen(double x) { return make_double2(x, 0.0); }
__device__ __forceinline__ double2 Widen(long long x) {
  return make_double2(static_cast<double>(x), 0.0);
}
__device__ __forceinline__ double2 Widen(float2 z) { return make_double2(z.x, z.y); }
__device__ __forceinline__ double2 Widen(double2 z) { return z; }

// A widened value as the destination type holds it (the imaginary part dropped for real ones),
// and stored there.
__device__ __forceinline__ double AsStored(const double*, double2 z) { return z.x; }
__device__ __forceinline__ double2 AsStored(const double2*, double2 z) { return z; }
template <typename D>
__device__ __forceinline__ void Store(D* p, double2 z) {
  *p = AsStored(p, z);
}

// ---- Row scaling ----

constexpr int kScaleThreads = 256;
constexpr int kWarpSize = 32;

// One block per row (grid-stride over rows): the row's largest max(|re|, |im|), then the row
// times 2^(1 - e) where largest is in [2^(e-1), 2^e). ldexp is exact unless a result falls
// below the normal range, which takes an entry 2^1022 times smaller than its row's largest.
// With abs_sums, also the sum of the scaled row's magnitudes, in LaunchColumnAbsSums's order
// (the same thread count and BlockSum), so the same bits as that kernel on dst.
template <typename S, typename D>
__global__ void __launch_bounds__(kScaleThreads)
    ScaleRowsKernel(const S* __restrict__ src, D* __restrict__ dst, int64_t rows, int64_t cols,
                    DeterminantSummary* summaries, int64_t rows_per_summary,
                    double* __restrict__ abs_sums) {
  __shared__ double warp_largest[kScaleThreads / kWarpSize];
  __shared__ double warp_sums[kScaleThreads / kWarpSize];
  __shared__ double row_largest;
  const int tid = threadIdx.x;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const S* in = src + row * cols;
    D* out = dst + row * cols;
    double largest = 0.0;
    for (int64_t j = tid; j < cols; j += kScaleThreads) {
      const double2 z = Widen(in[j]);
      largest = fmax(largest, fmax(fabs(z.x), fabs(z.y)));
    }
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
      largest = fmax(largest, __shfl_xor_sync(0xffffffffu, largest, offset));
    }
    if (tid % kWarpSize == 0) warp_largest[tid / kWarpSize] = largest;
    __syncthreads();
    if (tid == 0) {
      double block_largest = 0.0;
      for (int w = 0; w < kScaleThreads / kWarpSize; ++w) {
        block_largest = fmax(block_largest, warp_largest[w]);
      }
      row_largest = block_largest;
    }
    __syncthreads();
    int shift = 0;
    if (row_largest > 0.0) {
      int e = 0;
      frexp(row_largest, &e);
      shift = 1 - e;
    }
    double sum = 0.0;
    for (int64_t j = tid; j < cols; j += kScaleThreads) {
      const double2 z = Widen(in[j]);
      const double2 scaled = make_double2(ldexp(z.x, shift), ldexp(z.y, shift));
      Store(out + j, scaled);
      if (abs_sums != nullptr) sum += Magnitude(AsStored(out, scaled));
    }
    if (abs_sums != nullptr) {
      const double total = BlockSum<kScaleThreads>(sum, warp_sums);
      if (tid == 0) abs_sums[row] = total;
    }
    if (tid == 0) {
      DeterminantSummary* summary = summaries + row / rows_per_summary;
      if (row_largest == 0.0) {
        atomicAdd(&summary->zero_rows, 1);
      } else {
        // det(A) = det(scaled) * 2^-shift; unsigned (two's complement) addition of a signed
        // value is the signed sum.
        atomicAdd(reinterpret_cast<unsigned long long*>(&summary->row_exponent2),
                  static_cast<unsigned long long>(static_cast<long long>(-shift)));
      }
    }
    // row_largest, warp_largest and warp_sums are reused by the next row.
    __syncthreads();
  }
}

template <typename S, typename D>
cudaError_t ScaleRowsOf(const S* src, D* dst, int64_t rows, int64_t cols,
                        DeterminantSummary* summary, cudaStream_t stream,
                        int64_t rows_per_summary = 0, double* abs_sums = nullptr) {
  if (rows == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(std::min(rows, kMaxBlocks));
  ScaleRowsKernel<S, D><<<blocks, kScaleThreads, 0, stream>>>(
      src, dst, rows, cols, summary, rows_per_summary > 0 ? rows_per_summary : rows, abs_sums);
  return cudaGetLastError();
}

// ---- LU pivot summary ----

constexpr int kSummaryThreads = 256;

// x = (re + i im) * 2^e, kept with max(|re|, |im|) in [0.5, 1) so that no product of two of
// them can overflow or underflow whatever the magnitudes of the pivots (1e300 or 1e-300 alike).
struct Scaled {
  double re;
  double im;
  long long e;
};

__device__ __forceinline__ void Normalize(Scaled& x) {
  const double largest = fmax(fabs(x.re), fabs(x.im));
  if (largest == 0.0) {
    x = {0.0, 0.0, 0};
    return;
  }
  int shift = 0;
  frexp(largest, &shift);
  x.re = ldexp(x.re, -shift);
  x.im = ldexp(x.im, -shift);
  x.e += shift;
}

__device__ __forceinline__ Scaled Multiply(const Scaled& a, const Scaled& b) {
  Scaled product{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re, a.e + b.e};
  Normalize(product);
  return product;
}

template <typename T>
__global__ void __launch_bounds__(kSummaryThreads)
    LuPivotSummaryKernel(const T* lu, int n, int lda, const int* ipiv, const int* info,
                         DeterminantSummary* summary, int64_t matrix_stride) {
  // Matrix blockIdx.x of a batch (one block per matrix; the single matrix is block 0).
  lu += blockIdx.x * matrix_stride;
  ipiv += static_cast<int64_t>(blockIdx.x) * n;
  info += blockIdx.x;
  summary += blockIdx.x;
  __shared__ Scaled products[kSummaryThreads];
  __shared__ int swaps[kSummaryThreads];
  __shared__ int zeros[kSummaryThreads];
  __shared__ int nonfinite[kSummaryThreads];
  const int tid = threadIdx.x;

  Scaled product{1.0, 0.0, 0};
  int my_swaps = 0;
  int my_zeros = 0;
  int my_nonfinite = 0;
  for (int i = tid; i < n; i += kSummaryThreads) {
    if (ipiv[i] != i + 1) my_swaps ^= 1;
    const double2 d = Widen(lu[static_cast<int64_t>(i) * (static_cast<int64_t>(lda) + 1)]);
    if (!isfinite(d.x) || !isfinite(d.y)) {
      ++my_nonfinite;
    } else if (d.x == 0.0 && d.y == 0.0) {
      ++my_zeros;
    } else {
      // Normalise the factor first: a pivot near the bottom of the double range times a mantissa
      // of 0.5 would otherwise lose bits to gradual underflow.
      Scaled factor{d.x, d.y, 0};
      Normalize(factor);
      product = Multiply(product, factor);
    }
  }
  products[tid] = product;
  swaps[tid] = my_swaps;
  zeros[tid] = my_zeros;
  nonfinite[tid] = my_nonfinite;
  __syncthreads();
  for (int stride = kSummaryThreads / 2; stride > 0; stride /= 2) {
    if (tid < stride) {
      products[tid] = Multiply(products[tid], products[tid + stride]);
      swaps[tid] ^= swaps[tid + stride];
      zeros[tid] += zeros[tid + stride];
      nonfinite[tid] += nonfinite[tid + stride];
    }
    __syncthreads();
  }
  if (tid == 0) {
    summary->mantissa_real = products[0].re;
    summary->mantissa_imag = products[0].im;
    summary->exponent2 = products[0].e;
    summary->odd_swaps = swaps[0];
    summary->zero_pivots = zeros[0];
    summary->nonfinite_pivots = nonfinite[0];
    summary->info = *info;
  }
}

template <typename T>
cudaError_t LuPivotSummaryOf(const T* lu, int n, int lda, const int* ipiv, const int* info,
                             DeterminantSummary* summary, cudaStream_t stream) {
  LuPivotSummaryKernel<T><<<1, kSummaryThreads, 0, stream>>>(lu, n, lda, ipiv, info, summary, 0);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchTranspose(const void* src, int64_t rows, int64_t cols, int64_t src_ld, void* dst,
                            int64_t dst_ld, size_t element_size, cudaStream_t stream) {
  return ForElementSize(element_size, [&](auto bits) {
    return Transpose<decltype(bits)>(src, rows, cols, src_ld, dst, dst_ld, stream);
  });
}

cudaError_t LaunchCopy(const void* src, void* dst, size_t bytes, cudaStream_t stream) {
  if (bytes % sizeof(uint4) != 0) return cudaErrorInvalidValue;
  const int64_t count = static_cast<int64_t>(bytes / sizeof(uint4));
  if (count == 0) return cudaSuccess;
  CopyKernel<<<ElementwiseBlocks(count / 4 + 1), kElementwiseThreads, 0, stream>>>(
      static_cast<const uint4*>(src), static_cast<uint4*>(dst), count);
  return cudaGetLastError();
}

cudaError_t LaunchZeroStrictTriangle(void* data, int64_t rows, int64_t cols, size_t element_size,
                                     Triangle triangle, cudaStream_t stream) {
  const bool upper = triangle == Triangle::kUpper;
  return ForElementSize(element_size, [&](auto bits) {
    return ZeroStrictTriangle<decltype(bits)>(data, rows, cols, upper, stream);
  });
}

cudaError_t LaunchScaleRows(const float* src, double* dst, int64_t rows, int64_t cols,
                            DeterminantSummary* summary, cudaStream_t stream,
                            double* row_abs_sums) {
  return ScaleRowsOf(src, dst, rows, cols, summary, stream, 0, row_abs_sums);
}
cudaError_t LaunchScaleRows(const double* src, double* dst, int64_t rows, int64_t cols,
                            DeterminantSummary* summary, cudaStream_t stream,
                            double* row_abs_sums) {
  return ScaleRowsOf(src, dst, rows, cols, summary, stream, 0, row_abs_sums);
}
cudaError_t LaunchScaleRows(const int64_t* src, double* dst, int64_t rows, int64_t cols,
                            DeterminantSummary* summary, cudaStream_t stream,
                            double* row_abs_sums) {
  return ScaleRowsOf(reinterpret_cast<const long long*>(src), dst, rows, cols, summary, stream, 0,
                     row_abs_sums);
}
cudaError_t LaunchScaleRows(const std::complex<float>* src, std::complex<double>* dst, int64_t rows,
                            int64_t cols, DeterminantSummary* summary, cudaStream_t stream,
                            double* row_abs_sums) {
  return ScaleRowsOf(reinterpret_cast<const float2*>(src), reinterpret_cast<double2*>(dst), rows,
                     cols, summary, stream, 0, row_abs_sums);
}
cudaError_t LaunchScaleRows(const std::complex<double>* src, std::complex<double>* dst,
                            int64_t rows, int64_t cols, DeterminantSummary* summary,
                            cudaStream_t stream, double* row_abs_sums) {
  return ScaleRowsOf(reinterpret_cast<const double2*>(src), reinterpret_cast<double2*>(dst), rows,
                     cols, summary, stream, 0, row_abs_sums);
}

cudaError_t LaunchLuPivotSummary(const double* lu, int n, int lda, const int* ipiv, const int* info,
                                 DeterminantSummary* summary, cudaStream_t stream) {
  return LuPivotSummaryOf(lu, n, lda, ipiv, info, summary, stream);
}
cudaError_t LaunchLuPivotSummary(const std::complex<double>* lu, int n, int lda, const int* ipiv,
                                 const int* info, DeterminantSummary* summary,
                                 cudaStream_t stream) {
  return LuPivotSummaryOf(reinterpret_cast<const double2*>(lu), n, lda, ipiv, info, summary,
                          stream);
}

cudaError_t LaunchBatchedScaleRows(const float* src, double* dst, int64_t count, int64_t n,
                                   DeterminantSummary* summaries, cudaStream_t stream) {
  return ScaleRowsOf(src, dst, count * n, n, summaries, stream, n);
}
cudaError_t LaunchBatchedScaleRows(const double* src, double* dst, int64_t count, int64_t n,
                                   DeterminantSummary* summaries, cudaStream_t stream) {
  return ScaleRowsOf(src, dst, count * n, n, summaries, stream, n);
}
cudaError_t LaunchBatchedScaleRows(const std::complex<float>* src, std::complex<double>* dst,
                                   int64_t count, int64_t n, DeterminantSummary* summaries,
                                   cudaStream_t stream) {
  return ScaleRowsOf(reinterpret_cast<const float2*>(src), reinterpret_cast<double2*>(dst),
                     count * n, n, summaries, stream, n);
}
cudaError_t LaunchBatchedScaleRows(const std::complex<double>* src, std::complex<double>* dst,
                                   int64_t count, int64_t n, DeterminantSummary* summaries,
                                   cudaStream_t stream) {
  return ScaleRowsOf(reinterpret_cast<const double2*>(src), reinterpret_cast<double2*>(dst),
                     count * n, n, summaries, stream, n);
}

template <typename T>
cudaError_t BatchedLuPivotSummaryOf(const T* lu, int64_t count, int n, const int* ipiv,
                                    const int* info, DeterminantSummary* summaries,
                                    cudaStream_t stream) {
  for (int64_t first = 0; first < count; first += kMaxBlocks) {
    const int64_t size = std::min<int64_t>(count - first, kMaxBlocks);
    LuPivotSummaryKernel<T><<<static_cast<unsigned>(size), kSummaryThreads, 0, stream>>>(
        lu + first * n * n, n, n, ipiv + first * n, info + first, summaries + first,
        int64_t{n} * n);
  }
  return cudaGetLastError();
}

cudaError_t LaunchBatchedLuPivotSummary(const double* lu, int64_t count, int n, const int* ipiv,
                                        const int* info, DeterminantSummary* summaries,
                                        cudaStream_t stream) {
  return BatchedLuPivotSummaryOf(lu, count, n, ipiv, info, summaries, stream);
}
cudaError_t LaunchBatchedLuPivotSummary(const std::complex<double>* lu, int64_t count, int n,
                                        const int* ipiv, const int* info,
                                        DeterminantSummary* summaries, cudaStream_t stream) {
  return BatchedLuPivotSummaryOf(reinterpret_cast<const double2*>(lu), count, n, ipiv, info,
                                 summaries, stream);
}

}  // namespace matrixd::cuda
