#include <algorithm>

#include "core/cuda/device_element.cuh"
#include "core/cuda/norm_kernels.h"
#include "core/cuda/transpose_tile.cuh"

namespace matrixd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpSize = 32;
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

// One block per column (grid-stride over columns): a column is contiguous, so the block's loads
// are coalesced; the partial sums meet through warp shuffles and one shared array, in a fixed
// order (repeatable to the bit).
template <typename E>
__global__ void __launch_bounds__(kThreads)
    ColumnAbsSumsKernel(const E* __restrict__ a, int64_t rows, int64_t cols, int64_t ld,
                        bool upper_triangle, double* __restrict__ sums) {
  __shared__ double warp_sums[kThreads / kWarpSize];
  const int tid = threadIdx.x;
  for (int64_t col = blockIdx.x; col < cols; col += gridDim.x) {
    const int64_t height = upper_triangle ? min(rows, col + 1) : rows;
    const E* column = a + col * ld;
    double sum = 0.0;
    for (int64_t i = tid; i < height; i += kThreads) sum += Magnitude(column[i]);
    const double total = BlockSum<kThreads>(sum, warp_sums);
    if (tid == 0) sums[col] = total;
    __syncthreads();
  }
}

template <typename E>
cudaError_t ColumnAbsSumsOf(const E* a, int64_t rows, int64_t cols, int64_t ld, bool upper_triangle,
                            double* sums, cudaStream_t stream) {
  if (cols == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(std::min(cols, kMaxBlocks));
  ColumnAbsSumsKernel<E><<<blocks, kThreads, 0, stream>>>(a, rows, cols, ld, upper_triangle, sums);
  return cudaGetLastError();
}

// ---- Transpose with the sums ----

constexpr int kTile = kTransposeTile;
constexpr int kTileRowsPerPass = kTransposeTileRowsPerPass;

// One strip a step (grid-stride over strips): row of tiles i0 (kTile rows of src), tiles
// first_tile .. first_tile + kTransposeSumStripTiles - 1 along it, each by TransposeTile; thread
// (x, y) adds the magnitudes it reads of row i0 + x, and the kTileRowsPerPass threads of a row
// meet in shared memory, in y order, at the end of the strip.
template <typename E>
__global__ void __launch_bounds__(kTile* kTileRowsPerPass)
    TransposeWithAbsSumsKernel(const E* __restrict__ src, int64_t rows, int64_t cols,
                               int64_t src_ld, E* __restrict__ dst, int64_t dst_ld,
                               int64_t row_tiles, int64_t strips, double* __restrict__ partials) {
  __shared__ E tile[kTile][kTile + 1];
  __shared__ double row_parts[kTileRowsPerPass][kTile];
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  for (int64_t s = blockIdx.x; s < row_tiles * strips; s += gridDim.x) {
    const int64_t i0 = (s % row_tiles) * kTile;
    const int64_t strip = s / row_tiles;
    const int64_t i = i0 + threadIdx.x;
    const int64_t first_tile = strip * kTransposeSumStripTiles;
    const int64_t end_tile = min(col_tiles, first_tile + kTransposeSumStripTiles);
    double part = 0.0;
    for (int64_t t = first_tile; t < end_tile; ++t) {
      TransposeTile(src, rows, cols, src_ld, dst, dst_ld, i0, t * kTile, tile,
                    [&part](const E& v) { part += Magnitude(v); });
    }
    row_parts[threadIdx.y][threadIdx.x] = part;
    __syncthreads();
    if (threadIdx.y == 0 && i < rows) {
      double total = 0.0;
      for (int y = 0; y < kTileRowsPerPass; ++y) total += row_parts[y][threadIdx.x];
      partials[strip * rows + i] = total;
    }
    __syncthreads();
  }
}

// sums[i] := partials[0 rows + i] + partials[1 rows + i] + ..., in strip order.
__global__ void __launch_bounds__(kThreads)
    AddStripPartialsKernel(const double* __restrict__ partials, int64_t rows, int64_t strips,
                           double* __restrict__ sums) {
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < rows;
       i += int64_t{gridDim.x} * kThreads) {
    double total = 0.0;
    for (int64_t s = 0; s < strips; ++s) total += partials[s * rows + i];
    sums[i] = total;
  }
}

template <typename E>
cudaError_t TransposeWithAbsSumsOf(const E* src, int64_t rows, int64_t cols, int64_t src_ld, E* dst,
                                   int64_t dst_ld, double* partials, double* sums,
                                   cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (cols == 0)
    return cudaMemsetAsync(sums, 0, static_cast<size_t>(rows) * sizeof(double), stream);
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int64_t strips = TransposeSumPartials(rows, cols) / rows;
  const unsigned blocks = static_cast<unsigned>(std::min(row_tiles * strips, kMaxBlocks));
  TransposeWithAbsSumsKernel<E><<<blocks, dim3(kTile, kTileRowsPerPass), 0, stream>>>(
      src, rows, cols, src_ld, dst, dst_ld, row_tiles, strips, partials);
  const unsigned add_blocks =
      static_cast<unsigned>(std::min((rows + kThreads - 1) / kThreads, kMaxBlocks));
  AddStripPartialsKernel<<<add_blocks, kThreads, 0, stream>>>(partials, rows, strips, sums);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchTransposeWithAbsSums(const float* src, int64_t rows, int64_t cols, int64_t src_ld,
                                       float* dst, int64_t dst_ld, double* partials, double* sums,
                                       cudaStream_t stream) {
  return TransposeWithAbsSumsOf(src, rows, cols, src_ld, dst, dst_ld, partials, sums, stream);
}
cudaError_t LaunchTransposeWithAbsSums(const double* src, int64_t rows, int64_t cols,
                                       int64_t src_ld, double* dst, int64_t dst_ld,
                                       double* partials, double* sums, cudaStream_t stream) {
  return TransposeWithAbsSumsOf(src, rows, cols, src_ld, dst, dst_ld, partials, sums, stream);
}
cudaError_t LaunchTransposeWithAbsSums(const std::complex<float>* src, int64_t rows, int64_t cols,
                                       int64_t src_ld, std::complex<float>* dst, int64_t dst_ld,
                                       double* partials, double* sums, cudaStream_t stream) {
  return TransposeWithAbsSumsOf(reinterpret_cast<const float2*>(src), rows, cols, src_ld,
                                reinterpret_cast<float2*>(dst), dst_ld, partials, sums, stream);
}
cudaError_t LaunchTransposeWithAbsSums(const std::complex<double>* src, int64_t rows, int64_t cols,
                                       int64_t src_ld, std::complex<double>* dst, int64_t dst_ld,
                                       double* partials, double* sums, cudaStream_t stream) {
  return TransposeWithAbsSumsOf(reinterpret_cast<const double2*>(src), rows, cols, src_ld,
                                reinterpret_cast<double2*>(dst), dst_ld, partials, sums, stream);
}

cudaError_t LaunchColumnAbsSums(const float* a, int64_t rows, int64_t cols, int64_t ld,
                                bool upper_triangle, double* sums, cudaStream_t stream) {
  return ColumnAbsSumsOf(a, rows, cols, ld, upper_triangle, sums, stream);
}
cudaError_t LaunchColumnAbsSums(const double* a, int64_t rows, int64_t cols, int64_t ld,
                                bool upper_triangle, double* sums, cudaStream_t stream) {
  return ColumnAbsSumsOf(a, rows, cols, ld, upper_triangle, sums, stream);
}
cudaError_t LaunchColumnAbsSums(const std::complex<float>* a, int64_t rows, int64_t cols,
                                int64_t ld, bool upper_triangle, double* sums,
                                cudaStream_t stream) {
  return ColumnAbsSumsOf(reinterpret_cast<const float2*>(a), rows, cols, ld, upper_triangle, sums,
                         stream);
}
cudaError_t LaunchColumnAbsSums(const std::complex<double>* a, int64_t rows, int64_t cols,
                                int64_t ld, bool upper_triangle, double* sums,
                                cudaStream_t stream) {
  return ColumnAbsSumsOf(reinterpret_cast<const double2*>(a), rows, cols, ld, upper_triangle, sums,
                         stream);
}

}  // namespace matrixd::cuda
