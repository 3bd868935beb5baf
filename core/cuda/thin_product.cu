#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/device_element.cuh"
#include "core/cuda/library_types.h"
#include "core/cuda/thin_product.h"

// Two kernels, one per orientation of M (row-major, so "rows" are contiguous):
//
// M X (RowsKernel): each warp takes kRowsPerWarp rows of M; its lanes walk the rows 32 columns
// apart (one coalesced load a row and step), read element j of each vector of X (coalesced
// across the lanes, shared by the block's warps through L1) once for all of the warp's rows, and
// keep kRowsPerWarp x kThinColumns sums; a shuffle tree ends each row. (With X row-major, the
// lanes' loads of X were 64 bytes apart: on an H100 the kernel then moved M at a fifth of the
// memory bandwidth.)
//
// M^T X (ColumnsKernel): each thread takes one column of M over a chunk of kChunkRows rows; the
// elements of X it multiplies by are the same for the whole warp (broadcast loads). The chunks'
// sums go to scratch and ChunkSumsKernel adds them in chunk order.
//
// M is read with streaming loads (__ldcs: read once, evict first), so that a check running beside
// a product leaves L2 to it. Squares: each thread sums its elements' |m|^2 in double, the block's
// warps in warp order, one partial a block.

namespace matrixd::cuda {
namespace {

constexpr int kWarpSize = 32;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kChunkRows = 256;  // ColumnsKernel: rows of M a block sums over

// Rows a warp takes at once: 4; 2 for complex128 (32 sums of two doubles a thread); 8 for float32,
// whose 16-byte loads (RowsKernel) then bring 4 KiB of M a warp and step.
template <typename E>
constexpr int kRowsPerWarp = sizeof(E) == 16 ? 2 : (sizeof(E) == 4 ? 8 : 4);

template <typename E>
constexpr int RowsPerBlock() {
  return kWarps * kRowsPerWarp<E>;
}

// op over the block's threads' v in a fixed order (a shuffle tree in each warp, then the warps in
// order); every thread gets the result. Every thread of the block calls it.
template <typename Op>
__device__ __forceinline__ double BlockReduce(double v, Op op) {
  __shared__ double warp_values[kWarps];
  __shared__ double result;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  }
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  if (lane == 0) warp_values[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = warp_values[0];
    for (int w = 1; w < kWarps; ++w) total = op(total, warp_values[w]);
    result = total;
  }
  __syncthreads();
  return result;
}

__device__ __forceinline__ double Plus(double a, double b) { return a + b; }

// Adds the block's per-thread sums of squares; thread 0 writes the result.
__device__ __forceinline__ void WriteBlockSquares(double squares, double* partial) {
  const double total = BlockReduce(squares, Plus);
  if (threadIdx.x == 0) *partial = total;
}

// kVec consecutive elements of E at p (16 bytes, 16-byte aligned, when kVec > 1), as one load:
// streaming (read once) for M, through the read-only cache for X.
template <int kVec, bool kStreaming, typename E>
__device__ __forceinline__ void LoadVector(const E* p, E (&out)[kVec]) {
  if constexpr (kVec == 1) {
    out[0] = kStreaming ? __ldcs(p) : __ldg(p);
  } else {
    static_assert(kVec * sizeof(E) == sizeof(uint4));
    const uint4 raw = kStreaming ? __ldcs(reinterpret_cast<const uint4*>(p))
                                 : __ldg(reinterpret_cast<const uint4*>(p));
    memcpy(out, &raw, sizeof(raw));
  }
}

// Vectors c0 .. c0 + columns - 1 (columns <= kThinColumns) of out = M X:
// out[v rows + i] = sum_j m[i cols + j] x[v cols + j]. Each lane takes kVec consecutive
// columns a step (float32: 4, one 16-byte load, where cols allows).
template <typename E, bool kSquares, int kVec>
__global__ void __launch_bounds__(kThreads)
    RowsKernel(const E* __restrict__ m, int64_t rows, int64_t cols, const E* __restrict__ x, int c0,
               int columns, E* __restrict__ out, double* __restrict__ partials) {
  constexpr int kRows = kRowsPerWarp<E>;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * kWarps + warp) * kRows;
  const int valid_rows =
      static_cast<int>(std::min<int64_t>(kRows, std::max<int64_t>(0, rows - row0)));
  E sums[kRows][kThinColumns];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int c = 0; c < kThinColumns; ++c) sums[r][c] = Zero<E>();
  }
  double squares = 0;
  const E* x_c0 = x + c0 * cols;
#pragma unroll 2
  for (int64_t j = static_cast<int64_t>(lane) * kVec; j < cols; j += kWarpSize * kVec) {
    E xj[kThinColumns][kVec];
#pragma unroll
    for (int c = 0; c < kThinColumns; ++c) {
      if (c < columns) {
        LoadVector<kVec, false>(x_c0 + c * cols + j, xj[c]);
      } else {
#pragma unroll
        for (int t = 0; t < kVec; ++t) xj[c][t] = Zero<E>();
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r < valid_rows) {
        E v[kVec];
        LoadVector<kVec, true>(m + (row0 + r) * cols + j, v);
#pragma unroll
        for (int t = 0; t < kVec; ++t) {
          if constexpr (kSquares) squares += SquaredMagnitude(v[t]);
#pragma unroll
          for (int c = 0; c < kThinColumns; ++c) sums[r][c] = MulAdd(v[t], xj[c][t], sums[r][c]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int c = 0; c < kThinColumns; ++c) {
      const E total = WarpSum(sums[r][c]);
      if (lane == 0 && r < valid_rows && c < columns) out[(c0 + c) * rows + row0 + r] = total;
    }
  }
  if constexpr (kSquares) WriteBlockSquares(squares, partials + blockIdx.x);
}

// scratch[(chunk kThinColumns + c) cols + i] = sum over the chunk's rows j of
// m[j cols + i] x[(c0 + c) rows + j], chunk = blockIdx.y, for c < columns.
template <typename E, bool kSquares>
__global__ void __launch_bounds__(kThreads)
    ColumnsKernel(const E* __restrict__ m, int64_t rows, int64_t cols, const E* __restrict__ x,
                  int c0, int columns, E* __restrict__ scratch, double* __restrict__ partials) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * kChunkRows;
  const int64_t last = std::min<int64_t>(rows, first + kChunkRows);
  E sums[kThinColumns];
#pragma unroll
  for (int c = 0; c < kThinColumns; ++c) sums[c] = Zero<E>();
  double squares = 0;
  if (i < cols) {
    const E* x_c0 = x + c0 * rows;
#pragma unroll 4
    for (int64_t j = first; j < last; ++j) {
      const E v = __ldcs(m + j * cols + i);
      if constexpr (kSquares) squares += SquaredMagnitude(v);
#pragma unroll
      for (int c = 0; c < kThinColumns; ++c) {
        if (c < columns) sums[c] = MulAdd(v, __ldg(x_c0 + c * rows + j), sums[c]);
      }
    }
    E* target = scratch + static_cast<int64_t>(blockIdx.y) * kThinColumns * cols + i;
#pragma unroll
    for (int c = 0; c < kThinColumns; ++c) {
      if (c < columns) target[c * cols] = sums[c];
    }
  }
  if constexpr (kSquares) {
    WriteBlockSquares(squares,
                      partials + static_cast<int64_t>(blockIdx.y) * gridDim.x + blockIdx.x);
  }
}

// out[(c0 + c) cols + i] = sum over chunks (in order) of
// scratch[(chunk kThinColumns + c) cols + i].
template <typename E>
__global__ void __launch_bounds__(kThreads)
    ChunkSumsKernel(const E* __restrict__ scratch, int64_t cols, int64_t chunks, int c0,
                    int columns, E* __restrict__ out) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int c = static_cast<int>(t / cols);
  const int64_t i = t % cols;
  if (c >= columns) return;
  E total = Zero<E>();
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    total = Add(total, scratch[(chunk * kThinColumns + c) * cols + i]);
  }
  out[(c0 + c) * cols + i] = total;
}

// |a - b| in double (the subtraction too, as the host's check does it).
__device__ __forceinline__ double DifferenceMagnitude(float a, float b) {
  return fabs(static_cast<double>(a) - static_cast<double>(b));
}
__device__ __forceinline__ double DifferenceMagnitude(double a, double b) { return fabs(a - b); }
__device__ __forceinline__ double DifferenceMagnitude(float2 a, float2 b) {
  return hypot(static_cast<double>(a.x) - b.x, static_cast<double>(a.y) - b.y);
}
__device__ __forceinline__ double DifferenceMagnitude(double2 a, double2 b) {
  return hypot(a.x - b.x, a.y - b.y);
}

// The larger of a and b, NaN if either is (fmax would drop it: a NaN must not pass the check).
__device__ __forceinline__ double StickyMax(double a, double b) {
  return isnan(a) || isnan(b) ? a + b : fmax(a, b);
}

// norms[v] = ||z_v - w_v||_2 for vector v = blockIdx.x: the largest |difference| first, then the
// sum of squares of the differences divided by it (LAPACK's dnrm2 way: no overflow or underflow).
template <typename E>
__global__ void __launch_bounds__(kThreads)
    DifferenceNormsKernel(const E* __restrict__ z, const E* __restrict__ w, int64_t length,
                          double* __restrict__ norms) {
  const E* zv = z + static_cast<int64_t>(blockIdx.x) * length;
  const E* wv = w + static_cast<int64_t>(blockIdx.x) * length;
  double largest = 0;
  for (int64_t i = threadIdx.x; i < length; i += kThreads) {
    largest = StickyMax(largest, DifferenceMagnitude(zv[i], wv[i]));
  }
  largest = BlockReduce(largest, StickyMax);
  const bool scaled = largest > 0 && isfinite(largest);
  double sum = 0;
  if (scaled) {
    for (int64_t i = threadIdx.x; i < length; i += kThreads) {
      const double d = DifferenceMagnitude(zv[i], wv[i]) / largest;
      sum = fma(d, d, sum);
    }
  }
  sum = BlockReduce(sum, Plus);
  if (threadIdx.x == 0) norms[blockIdx.x] = scaled ? largest * sqrt(sum) : largest;
}

int64_t ColumnBlocks(int64_t cols) { return (cols + kThreads - 1) / kThreads; }
int64_t RowChunks(int64_t rows) { return (rows + kChunkRows - 1) / kChunkRows; }
template <typename E>
int64_t RowBlocks(int64_t rows) {
  return (rows + RowsPerBlock<E>() - 1) / RowsPerBlock<E>();
}

template <typename T>
absl::Status LaunchTyped(const ThinProductArgs& args, cudaStream_t stream) {
  using E = DeviceType<T>;
  const E* m = static_cast<const E*>(args.m);
  const E* x = static_cast<const E*>(args.x);
  E* out = static_cast<E*>(args.out);
  for (int c0 = 0; c0 < args.s; c0 += kThinColumns) {
    const int columns = std::min(kThinColumns, args.s - c0);
    // The squares in the first pass only.
    double* partials = c0 == 0 ? args.square_partials : nullptr;
    if (!args.transpose) {
      const dim3 grid(static_cast<unsigned>(RowBlocks<E>(args.rows)));
      // 16-byte loads when every row and vector starts on a 16-byte boundary (device buffers do).
      // float32 only: for 8-byte elements two a lane took 166-186 registers (one block an SM).
      constexpr int kVec = std::is_same_v<E, float> ? 4 : 1;
      const bool vector_loads = kVec > 1 && args.cols % kVec == 0 &&
                                reinterpret_cast<uintptr_t>(args.m) % sizeof(uint4) == 0 &&
                                reinterpret_cast<uintptr_t>(args.x) % sizeof(uint4) == 0;
      const auto launch = [&](auto kernel) {
        kernel<<<grid, kThreads, 0, stream>>>(m, args.rows, args.cols, x, c0, columns, out,
                                              partials);
      };
      if (partials != nullptr) {
        vector_loads ? launch(RowsKernel<E, true, kVec>) : launch(RowsKernel<E, true, 1>);
      } else {
        vector_loads ? launch(RowsKernel<E, false, kVec>) : launch(RowsKernel<E, false, 1>);
      }
      MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR("RowsKernel");
      continue;
    }
    E* scratch = static_cast<E*>(args.scratch);
    const dim3 grid(static_cast<unsigned>(ColumnBlocks(args.cols)),
                    static_cast<unsigned>(RowChunks(args.rows)));
    if (partials != nullptr) {
      ColumnsKernel<E, true><<<grid, kThreads, 0, stream>>>(m, args.rows, args.cols, x, c0, columns,
                                                            scratch, partials);
    } else {
      ColumnsKernel<E, false><<<grid, kThreads, 0, stream>>>(m, args.rows, args.cols, x, c0,
                                                             columns, scratch, nullptr);
    }
    MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR("ColumnsKernel");
    const int64_t threads = args.cols * columns;
    ChunkSumsKernel<E>
        <<<static_cast<unsigned>((threads + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
            scratch, args.cols, RowChunks(args.rows), c0, columns, out);
    MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR("ChunkSumsKernel");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LaunchDifferenceNorms(DType dtype, const void* z, const void* w, int64_t length, int s,
                                   double* norms, cudaStream_t stream) {
  if (!IsFloating(dtype) || length <= 0 || s < 1) {
    return absl::InvalidArgumentError(absl::StrCat("difference norms of ", s, " ", DTypeName(dtype),
                                                   " vectors of ", length,
                                                   " elements are not defined"));
  }
  return VisitFloatingType(dtype, [&](auto type) {
    using E = DeviceType<typename decltype(type)::type>;
    DifferenceNormsKernel<E><<<static_cast<unsigned>(s), kThreads, 0, stream>>>(
        static_cast<const E*>(z), static_cast<const E*>(w), length, norms);
    MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR("DifferenceNormsKernel");
    return absl::OkStatus();
  });
}

int64_t ThinProductPartials(DType dtype, int64_t rows, int64_t cols, bool transpose) {
  if (transpose) return ColumnBlocks(cols) * RowChunks(rows);
  switch (dtype) {
    case DType::kFloat32:
      return RowBlocks<float>(rows);
    case DType::kComplex128:
      return RowBlocks<double2>(rows);
    default:
      return RowBlocks<double>(rows);  // float64 and complex64: 4 rows a warp
  }
}

size_t ThinProductScratchBytes(DType dtype, int64_t rows, int64_t cols, bool transpose) {
  if (!transpose) return 0;
  return static_cast<size_t>(RowChunks(rows)) * static_cast<size_t>(cols) * kThinColumns *
         ElementSize(dtype);
}

absl::Status LaunchThinProduct(const ThinProductArgs& args, cudaStream_t stream) {
  if (!IsFloating(args.dtype) || args.rows <= 0 || args.cols <= 0 || args.s < 1) {
    return absl::InvalidArgumentError(absl::StrCat("thin product of a ", args.rows, "x", args.cols,
                                                   " ", DTypeName(args.dtype), " matrix with ",
                                                   args.s, " columns is not defined"));
  }
  return VisitFloatingType(args.dtype, [&](auto type) {
    return LaunchTyped<typename decltype(type)::type>(args, stream);
  });
}

}  // namespace matrixd::cuda
