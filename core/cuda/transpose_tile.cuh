// One tile of a transpose through shared memory, for the kernels that change a matrix's layout
// (dense_kernels.cu's transpose, norm_kernels.cu's transpose that sums on the way). Included by
// .cu files only.
#ifndef MATRIXD_CORE_CUDA_TRANSPOSE_TILE_CUH_
#define MATRIXD_CORE_CUDA_TRANSPOSE_TILE_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace matrixd::cuda {

// A tile is kTile x kTile elements, moved by a (kTile, kTileRowsPerPass) thread block.
inline constexpr int kTransposeTile = 32;
inline constexpr int kTransposeTileRowsPerPass = 8;

// dst := src^T on the tile of src (column-major rows x cols, leading dimension src_ld) at rows
// i0.. and columns j0.., into dst (column-major cols x rows, leading dimension dst_ld), through
// `tile`: the reads of src and the writes of dst are coalesced, and the +1 column keeps the
// column-wise reads off a single bank. on_read(v) sees each element of src this thread reads:
// thread (x, y) reads row i0 + x, columns j0 + y, j0 + y + kTransposeTileRowsPerPass, ...
// Every thread of the block must call it; it holds two __syncthreads().
template <typename E, typename OnRead>
__device__ __forceinline__ void TransposeTile(const E* __restrict__ src, int64_t rows, int64_t cols,
                                              int64_t src_ld, E* __restrict__ dst, int64_t dst_ld,
                                              int64_t i0, int64_t j0,
                                              E (&tile)[kTransposeTile][kTransposeTile + 1],
                                              OnRead&& on_read) {
  for (int p = threadIdx.y; p < kTransposeTile; p += kTransposeTileRowsPerPass) {
    const int64_t i = i0 + threadIdx.x;
    const int64_t j = j0 + p;
    if (i < rows && j < cols) {
      const E v = src[i + j * src_ld];
      tile[p][threadIdx.x] = v;
      on_read(v);
    }
  }
  __syncthreads();
  for (int p = threadIdx.y; p < kTransposeTile; p += kTransposeTileRowsPerPass) {
    const int64_t j = j0 + threadIdx.x;
    const int64_t i = i0 + p;
    if (i < rows && j < cols) dst[j + i * dst_ld] = tile[threadIdx.x][p];
  }
  __syncthreads();
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_TRANSPOSE_TILE_CUH_
