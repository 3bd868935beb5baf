#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/balanced_residue.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/fused_modular_product.h"
#include "core/status_macros.h"

namespace matrixd::cuda {
namespace {

// A thread block takes a kTileRows x kTileCols tile of C in one matrix; its four warps 32 x 32
// each (2 x 4 tiles of Hopper's m16n8k8 FP64 product). A and B pass through shared memory kChunk
// columns (rows) at a time, two chunks in flight (cp.async), padded so that the warps' fragment
// reads take the two wavefronts 256 bytes need and no more; for C - A B, C's tile is copied in
// first, beside the product, and read back for the reduction. The shape was measured against
// others (docs/benchmarks.md, 2026-11-27 from 22:50 UTC).
constexpr int kTileRows = 64;
constexpr int kTileCols = 64;
constexpr int kChunk = 16;
constexpr int kThreads = 128;
constexpr int kWarpTile = 32;
constexpr int kMmaRows = 16;
constexpr int kMmaCols = 8;
constexpr int kMmaDepth = 8;
constexpr int kRowFragments = kWarpTile / kMmaRows;
constexpr int kColFragments = kWarpTile / kMmaCols;
constexpr int kPitchA = kChunk + 4;
constexpr int kPitchB = kTileCols + 4;
// Rows of C's tile padded to 72 so that each quarter warp's 16-byte reads fall on distinct banks.
constexpr int kPitchC = kTileCols + 8;
constexpr int kStages = 2;
static_assert(kTileRows == 2 * kWarpTile && kTileCols == 2 * kWarpTile && kThreads == 4 * 32);
static_assert(kChunk % kMmaDepth == 0);

// kHigh: A arrives as two pieces, A = lo + kPieceBase hi (a leaf inverse), `a` holding lo and
// `a_high` hi. kSubtract: C's tile is copied in (C - A B); else C := A B reduced, and C may be B.
template <bool kHigh, bool kSubtract>
struct TileShared {
  double a[kStages][kTileRows][kPitchA];
  double a_high[kHigh ? kStages : 1][kHigh ? kTileRows : 1][kPitchA];
  double b[kStages][kChunk][kPitchB];
  alignas(16) double c[kSubtract ? kTileRows : 1][kPitchC];
};

// Where the A operand of every matrix lies: matrix m's block at first + m * matrix_stride, rows
// of stride ld; with a high piece, its hi at high_offset further (0: A in one piece).
struct LeftOperand {
  const double* first = nullptr;
  int64_t matrix_stride = 0;
  int64_t ld = 0;
  int64_t high_offset = 0;
};

// dst[0, kWidth) := src[0, count) then zeros, asynchronously (8 or 16 bytes; 16 needs both
// addresses 16-byte aligned). With count 0 nothing is read, but the callers still pass an address
// inside the matrix.
template <int kWidth>
__device__ __forceinline__ void CopyAsync(double* dst, const double* src, int count) {
  const auto shared = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  const int bytes = 8 * count;
  if constexpr (kWidth == 2) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(src),
                 "r"(bytes));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(shared), "l"(src),
                 "r"(bytes));
  }
}
__device__ __forceinline__ void CommitAsync() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void WaitAsync() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Values of a kWidth-wide copy at column v of a row that ends at `limit`: kWidth, fewer at the
// edge, 0 past it.
template <int kWidth>
__device__ __forceinline__ int Within(int64_t v, int64_t limit) {
  return static_cast<int>(max(int64_t{0}, min(int64_t{kWidth}, limit - v)));
}

// The rows x cols tile whose first entry is `first` (stride n), copied to shared memory at `dst`
// (row pitch kPitch), kWidth values a copy, zeros beyond `rows_left` rows and `cols_left`
// columns. Each thread copies every (kThreads / (cols / kWidth))-th row of one column.
template <int kWidth, int kRows, int kCols, int kPitch>
__device__ __forceinline__ void CopyTile(double* dst, const double* first, int64_t n,
                                         int64_t rows_left, int64_t cols_left) {
  constexpr int kCopiesPerRow = kCols / kWidth;
  constexpr int kRowStep = kThreads / kCopiesPerRow;
  static_assert(kThreads % kCopiesPerRow == 0 && kRows % kRowStep == 0);
  const int row = static_cast<int>(threadIdx.x) / kCopiesPerRow;
  const int col = static_cast<int>(threadIdx.x) % kCopiesPerRow * kWidth;
  const int in_row = Within<kWidth>(col, cols_left);
#pragma unroll 1
  for (int r = row; r < kRows; r += kRowStep) {
    const int count = r < rows_left ? in_row : 0;
    CopyAsync<kWidth>(dst + r * kPitch + col, count > 0 ? first + r * n + col : first, count);
  }
}

// d += a b for one m16n8k8 tile (fragments as the PTX ISA lays out .f64: a0..a3 at rows g, g + 8,
// g, g + 8 and columns t, t, t + 4, t + 4; b0, b1 at rows t, t + 4 and column g; d0..d3 at rows
// g, g, g + 8, g + 8 and columns 2t, 2t + 1; g = lane / 4, t = lane % 4).
__device__ __forceinline__ void Mma1688(double (&d)[4], const double (&a)[4],
                                        const double (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
}

// kWidth 2: every block's rows start 16-byte aligned (even strides and offsets), so copies take
// two values at a time. B and C lie in each matrix at blocks.b_offset and blocks.c_offset; A as
// `left` says (blocks.a_offset unused).
template <int kWidth, bool kHigh, bool kSubtract>
__global__ void __launch_bounds__(kThreads, 3)
    FusedProductKernel(ResidueBatch batch, LeftOperand left, FusedProductBlocks blocks,
                       int tile_cols) {
  using Shared = TileShared<kHigh, kSubtract>;
  const int m = static_cast<int>(blockIdx.y);
  if (batch.states[m].status != 0) return;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  Shared& s = *reinterpret_cast<Shared*>(shared_bytes);
  const int64_t n = batch.n;
  const double* matrix = batch.a + static_cast<int64_t>(m) * n * n;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x / tile_cols) * kTileRows;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x % tile_cols) * kTileCols;
  const double* a = left.first + static_cast<int64_t>(m) * left.matrix_stride + row0 * left.ld;
  const double* b = matrix + blocks.b_offset + col0;
  double* c = batch.a + static_cast<int64_t>(m) * n * n + blocks.c_offset + row0 * n + col0;
  const int64_t rows_left = blocks.rows - row0;
  const int64_t cols_left = blocks.cols - col0;

  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int group = lane >> 2;
  const int quad = lane & 3;
  const int warp_row = (warp >> 1) * kWarpTile;
  const int warp_col = (warp & 1) * kWarpTile;

  if constexpr (kSubtract) {
    // C's tile first, as its own group: the first chunk's wait covers it.
    CopyTile<kWidth, kTileRows, kTileCols, kPitchC>(&s.c[0][0], c, n, rows_left, cols_left);
    CommitAsync();
  }
  const auto load_chunk = [&](int stage, int64_t k0) {
    CopyTile<kWidth, kTileRows, kChunk, kPitchA>(&s.a[stage][0][0], a + k0, left.ld, rows_left,
                                                 blocks.depth - k0);
    if constexpr (kHigh) {
      CopyTile<kWidth, kTileRows, kChunk, kPitchA>(
          &s.a_high[stage][0][0], a + left.high_offset + k0, left.ld, rows_left, blocks.depth - k0);
    }
    CopyTile<kWidth, kChunk, kTileCols, kPitchB>(&s.b[stage][0][0], b + k0 * n, n,
                                                 blocks.depth - k0, cols_left);
    CommitAsync();
  };
  // An entry of A's chunk in shared memory, whole.
  const auto a_at = [&](int stage, int r, int k) {
    if constexpr (kHigh) return s.a[stage][r][k] + kPieceBase * s.a_high[stage][r][k];
    return s.a[stage][r][k];
  };

  double sum[kRowFragments][kColFragments][4] = {};
  const int chunks = static_cast<int>((blocks.depth + kChunk - 1) / kChunk);
  if (chunks > 0) load_chunk(0, 0);
  for (int q = 0; q < chunks; ++q) {
    const int stage = q % kStages;
    if (q + 1 < chunks) {
      load_chunk((q + 1) % kStages, static_cast<int64_t>(q + 1) * kChunk);
      WaitAsync<1>();
    } else {
      WaitAsync<0>();
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kChunk; kk += kMmaDepth) {
      double fa[kRowFragments][4];
      double fb[kColFragments][2];
#pragma unroll
      for (int i = 0; i < kRowFragments; ++i) {
        const int r = warp_row + kMmaRows * i + group;
        fa[i][0] = a_at(stage, r, kk + quad);
        fa[i][1] = a_at(stage, r + 8, kk + quad);
        fa[i][2] = a_at(stage, r, kk + quad + 4);
        fa[i][3] = a_at(stage, r + 8, kk + quad + 4);
      }
#pragma unroll
      for (int j = 0; j < kColFragments; ++j) {
        const double* at = &s.b[stage][kk + quad][warp_col + kMmaCols * j + group];
        fb[j][0] = at[0];
        fb[j][1] = at[4 * kPitchB];
      }
#pragma unroll
      for (int i = 0; i < kRowFragments; ++i) {
#pragma unroll
        for (int j = 0; j < kColFragments; ++j) Mma1688(sum[i][j], fa[i], fb[j]);
      }
    }
    __syncthreads();  // the stage is loaded again two chunks on
  }
  if (chunks == 0) {
    WaitAsync<0>();
    __syncthreads();
  }

  // Every read of B (which C may be) is done: the last chunk's barrier is behind.
  const BalancedModulus f = batch.moduli[m];
#pragma unroll
  for (int i = 0; i < kRowFragments; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp_row + kMmaRows * i + 8 * h + group;
      if (r >= rows_left) continue;
#pragma unroll
      for (int j = 0; j < kColFragments; ++j) {
        const int v = warp_col + kMmaCols * j + 2 * quad;
        // C - A B or A B; |C| + |A B| <= 2^53 (the one-piece condition): exact.
        double x0 = sum[i][j][2 * h];
        double x1 = sum[i][j][2 * h + 1];
        if constexpr (kSubtract) {
          const double2 old = *reinterpret_cast<const double2*>(&s.c[r][v]);
          x0 = old.x - x0;
          x1 = old.y - x1;
        }
        double* out = c + r * n + v;
        if (v < cols_left) out[0] = f.Reduce(x0);
        if (v + 1 < cols_left) out[1] = f.Reduce(x1);
      }
    }
  }
}

template <int kWidth, bool kHigh, bool kSubtract>
absl::Status Launch(cudaStream_t stream, const ResidueBatch& batch, const LeftOperand& left,
                    const FusedProductBlocks& blocks) {
  const auto kernel = FusedProductKernel<kWidth, kHigh, kSubtract>;
  const size_t bytes = sizeof(TileShared<kHigh, kSubtract>);
  const int64_t tile_rows = (blocks.rows + kTileRows - 1) / kTileRows;
  const int64_t tile_cols = (blocks.cols + kTileCols - 1) / kTileCols;
  const dim3 grid(static_cast<unsigned>(tile_rows * tile_cols), static_cast<unsigned>(batch.count));
  // Above the 48 KiB a kernel gets without asking: three blocks an SM.
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  kernel<<<grid, kThreads, bytes, stream>>>(batch, left, blocks, static_cast<int>(tile_cols));
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(kernel);
  return absl::OkStatus();
}

// Two values a copy where every row of every block starts 16-byte aligned.
bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
template <bool kHigh, bool kSubtract>
absl::Status LaunchAligned(cudaStream_t stream, const ResidueBatch& batch, const LeftOperand& left,
                           const FusedProductBlocks& blocks) {
  const bool wide = batch.n % 2 == 0 && Aligned(batch.a) && blocks.b_offset % 2 == 0 &&
                    blocks.c_offset % 2 == 0 && Aligned(left.first) &&
                    left.matrix_stride % 2 == 0 && left.ld % 2 == 0 && left.high_offset % 2 == 0;
  return wide ? Launch<2, kHigh, kSubtract>(stream, batch, left, blocks)
              : Launch<1, kHigh, kSubtract>(stream, batch, left, blocks);
}

absl::Status CheckExtents(const FusedProductBlocks& blocks) {
  if (blocks.rows < 0 || blocks.cols < 0 || blocks.depth < 0) {
    return absl::InvalidArgumentError(absl::StrCat("fused product: negative extent (rows ",
                                                   blocks.rows, ", cols ", blocks.cols, ", depth ",
                                                   blocks.depth, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LaunchFusedSubtractProduct(cudaStream_t stream, const ResidueBatch& batch,
                                        const FusedProductBlocks& blocks) {
  MATRIXD_RETURN_IF_ERROR(CheckExtents(blocks));
  if (blocks.rows == 0 || blocks.cols == 0 || batch.count == 0) return absl::OkStatus();
  const LeftOperand left{
      .first = batch.a + blocks.a_offset, .matrix_stride = batch.n * batch.n, .ld = batch.n};
  return LaunchAligned<false, true>(stream, batch, left, blocks);
}

absl::Status LaunchFusedApplyInverse(cudaStream_t stream, const ResidueBatch& batch,
                                     const LeafInverses& inverses, int w, int64_t b_offset,
                                     int64_t cols) {
  if (w < 0 || w > kMaxLeafWidth) {
    return absl::InvalidArgumentError(
        absl::StrCat("fused leaf inverse: width ", w, " outside [0, ", kMaxLeafWidth, "]"));
  }
  const FusedProductBlocks blocks{
      .b_offset = b_offset, .c_offset = b_offset, .rows = w, .cols = cols, .depth = w};
  MATRIXD_RETURN_IF_ERROR(CheckExtents(blocks));
  if (w == 0 || cols == 0 || batch.count == 0) return absl::OkStatus();
  const LeftOperand left{.first = inverses.first,
                         .matrix_stride = inverses.matrix_stride,
                         .ld = w,
                         .high_offset = int64_t{w} * w};
  return LaunchAligned<true, false>(stream, batch, left, blocks);
}

}  // namespace matrixd::cuda
