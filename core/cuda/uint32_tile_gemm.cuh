// The UINT32 product kernel shared by the dense product (uint32_gemm.cu) and the block-sparse one
// (block_sparse.cu): C = op(A) op(B) with uint32 multiply-adds, which wrap mod 2^32 as the
// contract asks (cuBLAS has no such GEMM). A block of 256 threads computes a 128 x 128 tile of C,
// 8 x 8 entries per thread in registers, stepping through the inner dimension in slabs of 16:
// each slab of op(A) and op(B) is staged in shared memory (k-major, so that a thread reads its 8
// rows and 8 columns as four 16-byte vectors), and the next slab's global loads are issued before
// the current slab's multiply-adds so that their latency hides behind them.
//
// A `Slabs` policy says which slabs a tile needs: all of them (dense), or only those that meet a
// pair of non-zero blocks (block-sparse). Skipping is exact: a skipped slab only holds products
// with a zero factor. Included by uint32_gemm.cu and block_sparse.cu only.
#ifndef MATRIXD_CORE_CUDA_UINT32_TILE_GEMM_CUH_
#define MATRIXD_CORE_CUDA_UINT32_TILE_GEMM_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace matrixd::cuda {

inline constexpr int kGemmTile = 128;
inline constexpr int kGemmDepth = 16;
inline constexpr int kGemmThreads = 256;
// Launches cover at most this many tile rows (the grid's y limit).
inline constexpr int64_t kGemmMaxTileRows = 65535;

// Every slab of every tile.
struct DenseSlabs {
  static constexpr bool kSkips = false;
  __device__ bool Needed(int64_t /*tile_row*/, int64_t /*tile_col*/, int64_t /*slab*/) const {
    return true;
  }
};

// The slabs that meet a k-block bk where some block of op(A) in the tile's rows and some block of
// op(B) in the tile's columns are non-zero: a_tiles[tile_row * k_blocks + bk] and
// b_tiles[bk * tile_cols + tile_col] are 1 for those.
struct SparseSlabs {
  static constexpr bool kSkips = true;
  const uint8_t* a_tiles;  // tile_rows x k_blocks
  const uint8_t* b_tiles;  // k_blocks x tile_cols
  int64_t k_blocks;
  int64_t tile_cols;
  int64_t block_size;
  int64_t k;

  __device__ bool Needed(int64_t tile_row, int64_t tile_col, int64_t slab) const {
    const int64_t first = slab * kGemmDepth;
    const int64_t last = (first + kGemmDepth < k ? first + kGemmDepth : k) - 1;
    for (int64_t bk = first / block_size; bk <= last / block_size; ++bk) {
      if (a_tiles[tile_row * k_blocks + bk] != 0 && b_tiles[bk * tile_cols + tile_col] != 0) {
        return true;
      }
    }
    return false;
  }
};

// op(A) is m x k: A itself (row-major m x k) or, with kTransposeA, the transpose of A (row-major
// k x m). Likewise op(B), k x n. C is row-major m x n. Tile rows from first_tile_row +
// blockIdx.y, tile columns blockIdx.x.
template <bool kTransposeA, bool kTransposeB, typename Slabs>
__global__ void __launch_bounds__(kGemmThreads)
    Uint32GemmKernel(int64_t m, int64_t n, int64_t k, const uint32_t* __restrict__ a,
                     const uint32_t* __restrict__ b, uint32_t* __restrict__ c,
                     int64_t first_tile_row, Slabs slabs) {
  // +4 words of padding keep each row 16-byte aligned and spread the transposing stores of the
  // row-major operands over more banks.
  __shared__ __align__(16) uint32_t a_slab[kGemmDepth][kGemmTile + 4];
  __shared__ __align__(16) uint32_t b_slab[kGemmDepth][kGemmTile + 4];

  const int64_t tile_row = first_tile_row + blockIdx.y;
  const int64_t tile_col = blockIdx.x;
  const int64_t row0 = tile_row * kGemmTile;
  const int64_t col0 = tile_col * kGemmTile;
  const int t = threadIdx.x;

  // Loads of one slab: 8 entries of op(A) and 8 of op(B) per thread, mapped so that consecutive
  // threads read consecutive addresses of the stored matrix.
  uint32_t a_next[8];
  uint32_t b_next[8];
  const auto load_slab = [&](int64_t slab) {
    const int64_t p0 = slab * kGemmDepth;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      // op(A)(row0 + r, p0 + q)
      const int r = kTransposeA ? t % kGemmTile : t / kGemmDepth + 16 * u;
      const int q = kTransposeA ? t / kGemmTile + 2 * u : t % kGemmDepth;
      const int64_t i = row0 + r;
      const int64_t p = p0 + q;
      a_next[u] = 0;
      if (i < m && p < k) a_next[u] = kTransposeA ? a[p * m + i] : a[i * k + p];
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      // op(B)(p0 + q, col0 + j)
      const int q = kTransposeB ? t % kGemmDepth : t / kGemmTile + 2 * u;
      const int j = kTransposeB ? t / kGemmDepth + 16 * u : t % kGemmTile;
      const int64_t p = p0 + q;
      const int64_t col = col0 + j;
      b_next[u] = 0;
      if (p < k && col < n) b_next[u] = kTransposeB ? b[col * k + p] : b[p * n + col];
    }
  };
  const auto store_slab = [&] {
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int r = kTransposeA ? t % kGemmTile : t / kGemmDepth + 16 * u;
      const int q = kTransposeA ? t / kGemmTile + 2 * u : t % kGemmDepth;
      a_slab[q][r] = a_next[u];
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int q = kTransposeB ? t % kGemmDepth : t / kGemmTile + 2 * u;
      const int j = kTransposeB ? t / kGemmDepth + 16 * u : t % kGemmTile;
      b_slab[q][j] = b_next[u];
    }
  };

  // This thread's entries of the tile: rows ty*4 + {0..3} and 64 + ty*4 + {0..3}, columns
  // likewise from tx; two 4-wide halves keep the 16-byte shared-memory reads conflict-free.
  const int tx = t % 16;
  const int ty = t / 16;
  uint32_t acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0;
  }

  // With skipping, the block first marks the needed slabs of a window of kMaskSlabs in a shared
  // bit mask, all threads checking slabs in parallel; the search for the next needed slab then
  // reads the mask (uniformly, so every thread finds the same slab). One thread checking slab
  // after slab would wait out a global load for each of thousands of skipped slabs.
  constexpr int kMaskWords = Slabs::kSkips ? 1024 : 1;
  constexpr int64_t kMaskSlabs = 32 * kMaskWords;
  __shared__ uint32_t needed_mask[kMaskWords];
  const int64_t slab_count = (k + kGemmDepth - 1) / kGemmDepth;
  int64_t window = -1;  // the window in needed_mask: slabs [window * kMaskSlabs, + kMaskSlabs)
  // Every thread of the block calls it with the same slab (it synchronises the block).
  const auto next_needed = [&](int64_t slab) -> int64_t {
    if constexpr (!Slabs::kSkips) {
      return slab;
    } else {
      while (slab < slab_count) {
        if (slab / kMaskSlabs != window) {
          window = slab / kMaskSlabs;
          const int64_t first = window * kMaskSlabs;
          __syncthreads();  // the last window's readers are done
          for (int w = t; w < kMaskWords; w += kGemmThreads) {
            uint32_t bits = 0;
            for (int bit = 0; bit < 32; ++bit) {
              const int64_t s = first + 32 * w + bit;
              if (s >= slab_count) break;
              if (slabs.Needed(tile_row, tile_col, s)) bits |= 1u << bit;
            }
            needed_mask[w] = bits;
          }
          __syncthreads();
        }
        const int64_t offset = slab % kMaskSlabs;
        const uint32_t bits = needed_mask[offset / 32] >> (offset % 32);
        if (bits != 0) return slab + __ffs(static_cast<int>(bits)) - 1;
        slab += 32 - offset % 32;  // on to the next word of the mask
      }
      return slab_count;
    }
  };
  int64_t slab = next_needed(0);
  if (slab < slab_count) {
    load_slab(slab);
    store_slab();
  }
  __syncthreads();
  while (slab < slab_count) {
    const int64_t next = next_needed(slab + 1);
    if (next < slab_count) load_slab(next);
#pragma unroll
    for (int q = 0; q < kGemmDepth; ++q) {
      const uint4 a_low = *reinterpret_cast<const uint4*>(&a_slab[q][ty * 4]);
      const uint4 a_high = *reinterpret_cast<const uint4*>(&a_slab[q][64 + ty * 4]);
      const uint4 b_low = *reinterpret_cast<const uint4*>(&b_slab[q][tx * 4]);
      const uint4 b_high = *reinterpret_cast<const uint4*>(&b_slab[q][64 + tx * 4]);
      const uint32_t av[8] = {a_low.x,  a_low.y,  a_low.z,  a_low.w,
                              a_high.x, a_high.y, a_high.z, a_high.w};
      const uint32_t bv[8] = {b_low.x,  b_low.y,  b_low.z,  b_low.w,
                              b_high.x, b_high.y, b_high.z, b_high.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += av[i] * bv[j];
      }
    }
    __syncthreads();
    if (next < slab_count) store_slab();
    __syncthreads();
    slab = next;
  }

  // Row segments of 16 bytes when the whole segment is inside C and aligned (n % 4 == 0).
  const bool vector_stores = n % 4 == 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t row = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
    if (row >= m) continue;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t col = col0 + half * 64 + tx * 4;
      uint32_t* out = c + row * n + col;
      if (vector_stores && col + 3 < n) {
        *reinterpret_cast<uint4*>(out) = make_uint4(acc[i][half * 4], acc[i][half * 4 + 1],
                                                    acc[i][half * 4 + 2], acc[i][half * 4 + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (col + j < n) out[j] = acc[i][half * 4 + j];
        }
      }
    }
  }
}

// Queues the tile rows [first_tile_row, first_tile_row + tile_rows) of C = op(A) op(B).
// REQUIRES: 1 <= tile_rows <= kGemmMaxTileRows; device pointers; C 16-byte aligned.
template <bool kTransposeA, bool kTransposeB, typename Slabs>
cudaError_t LaunchUint32Gemm(int64_t m, int64_t n, int64_t k, const uint32_t* a, const uint32_t* b,
                             uint32_t* c, int64_t first_tile_row, int64_t tile_rows,
                             const Slabs& slabs, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((n + kGemmTile - 1) / kGemmTile),
                  static_cast<unsigned>(tile_rows));
  Uint32GemmKernel<kTransposeA, kTransposeB, Slabs>
      <<<grid, kGemmThreads, 0, stream>>>(m, n, k, a, b, c, first_tile_row, slabs);
  return cudaGetLastError();
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_UINT32_TILE_GEMM_CUH_
