#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/cuda/bulk_copy.cuh"
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
// memory bandwidth.) A warp streams whole rows, so an M of few rows (a row piece of an operand
// still being uploaded) would leave most of the device idle and take a row's length in latency:
// there the columns are cut into segments (grid.y), each block's sums go to scratch and
// PartSumsKernel adds the segments in order. Where M's rows are whole 16-byte units (any float64
// M of even width), StagedRowsKernel does the same product with M's rows brought into shared
// memory by bulk copies instead: the same bits, nearer copy bandwidth.
//
// M^T X (ColumnsKernel): each thread takes one column of M over a chunk of kChunkRows rows; the
// elements of X it multiplies by are the same for the whole warp (broadcast loads). The chunks'
// sums go to scratch and PartSumsKernel adds them in chunk order.
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
// RowsKernel: column segments are added until the grid has this many blocks (two an SM on an
// H100), each segment at least kMinSegmentColumns long and a multiple of kSegmentAlignment
// (whole 16-byte loads, coalesced).
constexpr int64_t kFullGridBlocks = 264;
constexpr int64_t kMinSegmentColumns = 512;
constexpr int64_t kSegmentAlignment = 128;

// Rows a warp takes at once: 4; 2 for complex128 (32 sums of two doubles a thread). (float32 with
// 8 rows, its 16-byte loads bringing 4 KiB of M a warp and step, took 222 registers a thread: one
// block an SM, and 32 % of the memory bandwidth on an H100.)
template <typename E>
constexpr int kRowsPerWarp = sizeof(E) == 16 ? 2 : 4;

template <typename E>
constexpr int RowsPerBlock() {
  return kWarps * kRowsPerWarp<E>;
}

// op over the block's threads' v in a fixed order (a shuffle tree in each warp, then the warps in
// order); every thread gets the result. Every thread of the block (kBlockThreads) calls it.
template <int kBlockThreads = kThreads, typename Op>
__device__ __forceinline__ double BlockReduce(double v, Op op) {
  constexpr int kBlockWarps = kBlockThreads / kWarpSize;
  __shared__ double warp_values[kBlockWarps];
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
    for (int w = 1; w < kBlockWarps; ++w) total = op(total, warp_values[w]);
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

// kVec consecutive elements of E at shared-memory p (16-byte aligned when kVec > 1), as one load.
template <int kVec, typename E>
__device__ __forceinline__ void SharedVector(const E* p, E (&out)[kVec]) {
  if constexpr (kVec == 1) {
    out[0] = *p;
  } else {
    static_assert(kVec * sizeof(E) == sizeof(uint4));
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    memcpy(out, &raw, sizeof(raw));
  }
}

// One lane step of a rows kernel: kVec columns of X's first `columns` vectors (load_x(c, out);
// zero beyond) and of the warp's first valid_rows rows (load_row(r, out)) multiplied into sums,
// and the rows' |m|^2 into squares, in one fixed order (rows, then columns, then vectors).
template <typename E, bool kSquares, int kVec, typename LoadX, typename LoadRow>
__device__ __forceinline__ void AccumulateStep(int columns, int valid_rows, LoadX load_x,
                                               LoadRow load_row,
                                               E (&sums)[kRowsPerWarp<E>][kThinColumns],
                                               double& squares) {
  E xj[kThinColumns][kVec];
#pragma unroll
  for (int c = 0; c < kThinColumns; ++c) {
    if (c < columns) {
      load_x(c, xj[c]);
    } else {
#pragma unroll
      for (int t = 0; t < kVec; ++t) xj[c][t] = Zero<E>();
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp<E>; ++r) {
    if (r < valid_rows) {
      E v[kVec];
      load_row(r, v);
#pragma unroll
      for (int t = 0; t < kVec; ++t) {
        if constexpr (kSquares) squares += SquaredMagnitude(v[t]);
#pragma unroll
        for (int c = 0; c < kThinColumns; ++c) sums[r][c] = MulAdd(v[t], xj[c][t], sums[r][c]);
      }
    }
  }
}

// The end of a rows kernel: each warp's sums of its kRowsPerWarp rows added over its lanes (a
// fixed tree) and written to vector c of out (see RowsKernel), the block's squares to its partial.
template <typename E, bool kSquares>
__device__ __forceinline__ void WriteRowSums(const E (&sums)[kRowsPerWarp<E>][kThinColumns],
                                             double squares, int lane, int64_t row0, int valid_rows,
                                             int columns, E* __restrict__ out, int64_t out_stride,
                                             int64_t segment_stride,
                                             double* __restrict__ partials) {
#pragma unroll
  for (int r = 0; r < kRowsPerWarp<E>; ++r) {
#pragma unroll
    for (int c = 0; c < kThinColumns; ++c) {
      const E total = WarpSum(sums[r][c]);
      if (lane == 0 && r < valid_rows && c < columns) {
        out[blockIdx.y * segment_stride + c * out_stride + row0 + r] = total;
      }
    }
  }
  if constexpr (kSquares) {
    WriteBlockSquares(squares,
                      partials + static_cast<int64_t>(blockIdx.y) * gridDim.x + blockIdx.x);
  }
}

// Vectors c0 .. c0 + columns - 1 (columns <= kThinColumns) of out = M X over the columns of
// segment blockIdx.y ([y segment_cols, (y + 1) segment_cols) of cols):
// out[v out_stride + i] = sum_j m[i cols + j] x[v cols + j]. Each lane takes kVec consecutive
// columns a step (float32: 4, one 16-byte load, where cols allows). Vector c0 + c of the
// segment's sums goes to out + blockIdx.y segment_stride + c out_stride: the result itself for
// one segment (segment_stride 0, out at vector c0), scratch for PartSumsKernel for several.
template <typename E, bool kSquares, int kVec>
__global__ void __launch_bounds__(kThreads)
    RowsKernel(const E* __restrict__ m, int64_t rows, int64_t cols, int64_t segment_cols,
               const E* __restrict__ x, int c0, int columns, E* __restrict__ out,
               int64_t out_stride, int64_t segment_stride, double* __restrict__ partials) {
  constexpr int kRows = kRowsPerWarp<E>;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * kWarps + warp) * kRows;
  const int64_t first_col = static_cast<int64_t>(blockIdx.y) * segment_cols;
  const int64_t end_col = std::min(cols, first_col + segment_cols);
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
  for (int64_t j = first_col + static_cast<int64_t>(lane) * kVec; j < end_col;
       j += kWarpSize * kVec) {
    AccumulateStep<E, kSquares, kVec>(
        columns, valid_rows,
        [&](int c, E(&out)[kVec]) { LoadVector<kVec, false>(x_c0 + c * cols + j, out); },
        [&](int r, E(&out)[kVec]) { LoadVector<kVec, true>(m + (row0 + r) * cols + j, out); }, sums,
        squares);
  }
  WriteRowSums<E, kSquares>(sums, squares, lane, row0, valid_rows, columns, out, out_stride,
                            segment_stride, partials);
}

// StagedRowsKernel: RowsKernel's product with M's rows (and X's vectors) brought into shared
// memory by bulk copies, kStages chunks of kStageRowBytes a row ahead, instead of by each warp's
// own loads. A warp's loads kept too few bytes in flight for float64 (one 8-byte load a lane, row
// and step: 70 % of the DRAM peak on an H100 at 128 registers, and 166-186 registers with two);
// the copy engine holds a whole stage in flight without registers. Each lane takes the same
// columns in the same order as in RowsKernel (kVec consecutive ones, 32 kVec apart; a chunk is a
// multiple of 32 kVec columns), so the two give the same bits. REQUIRES every row of M and vector
// of X 16-byte aligned, and cols (and segment_cols) such that a chunk is a multiple of 16 bytes.
constexpr int kStageRowBytes = 1024;
constexpr int kStages = 2;

template <typename E>
struct StagedTile {
  static constexpr int kRows = RowsPerBlock<E>();
  static constexpr int kCols = kStageRowBytes / static_cast<int>(sizeof(E));
  // A stage: kRows rows of M, then kThinColumns vectors of X, kCols elements each.
  static constexpr int64_t kStageElements = static_cast<int64_t>(kRows + kThinColumns) * kCols;
  static constexpr size_t kSharedBytes =
      kStages * kStageElements * sizeof(E) + kStages * sizeof(uint64_t);
};

template <typename E, bool kSquares, int kVec>
__global__ void __launch_bounds__(kThreads)
    StagedRowsKernel(const E* __restrict__ m, int64_t rows, int64_t cols, int64_t segment_cols,
                     const E* __restrict__ x, int c0, int columns, E* __restrict__ out,
                     int64_t out_stride, int64_t segment_stride, double* __restrict__ partials) {
  using Tile = StagedTile<E>;
  constexpr int kRows = kRowsPerWarp<E>;
  static_assert(Tile::kCols % (kWarpSize * kVec) == 0);
  extern __shared__ __align__(16) unsigned char staged_shared[];
  E* const stages = reinterpret_cast<E*>(staged_shared);
  uint64_t* const landed =
      reinterpret_cast<uint64_t*>(staged_shared + kStages * Tile::kStageElements * sizeof(E));
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t block_row0 = static_cast<int64_t>(blockIdx.x) * Tile::kRows;
  const int block_rows = static_cast<int>(std::min<int64_t>(Tile::kRows, rows - block_row0));
  const int64_t first_col = static_cast<int64_t>(blockIdx.y) * segment_cols;
  const int64_t end_col = std::min(cols, first_col + segment_cols);
  const int64_t chunks = (end_col - first_col + Tile::kCols - 1) / Tile::kCols;
  const E* const x_c0 = x + c0 * cols;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) BarrierInit(&landed[s], 1);
    FenceBarrierInit();
  }
  __syncthreads();
  // Warp 0 queues chunk `chunk` into its stage: one copy a row and a vector, from one lane each.
  const auto queue_chunk = [&](int64_t chunk) {
    const int stage = static_cast<int>(chunk % kStages);
    const int64_t k0 = first_col + chunk * Tile::kCols;
    const auto bytes =
        static_cast<uint32_t>(std::min<int64_t>(Tile::kCols, end_col - k0) * sizeof(E));
    E* const tile = stages + stage * Tile::kStageElements;
    if (lane == 0) BarrierArriveExpectBytes(&landed[stage], bytes * (block_rows + columns));
    __syncwarp();
    const uint64_t read_once = EvictFirstPolicy();
    for (int r = lane; r < block_rows; r += kWarpSize) {
      BulkCopyToShared(tile + r * Tile::kCols, m + (block_row0 + r) * cols + k0, bytes,
                       &landed[stage], read_once);
    }
    if (lane < columns) {
      BulkCopyToShared(tile + (Tile::kRows + lane) * Tile::kCols, x_c0 + lane * cols + k0, bytes,
                       &landed[stage]);
    }
  };
  if (warp == 0) {
    for (int64_t chunk = 0; chunk < std::min<int64_t>(kStages, chunks); ++chunk) {
      queue_chunk(chunk);
    }
  }
  const int first_row = warp * kRows;  // the warp's rows within the block
  const int valid_rows = std::clamp(block_rows - first_row, 0, kRows);
  E sums[kRows][kThinColumns];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int c = 0; c < kThinColumns; ++c) sums[r][c] = Zero<E>();
  }
  double squares = 0;
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int stage = static_cast<int>(chunk % kStages);
    BarrierWait(&landed[stage], static_cast<uint32_t>((chunk / kStages) & 1));
    const int width = static_cast<int>(
        std::min<int64_t>(Tile::kCols, end_col - (first_col + chunk * Tile::kCols)));
    const E* const tile = stages + stage * Tile::kStageElements;
    const E* const xs = tile + Tile::kRows * Tile::kCols;
#pragma unroll
    for (int j0 = 0; j0 < Tile::kCols; j0 += kWarpSize * kVec) {
      const int j = j0 + lane * kVec;
      if (j >= width) break;
      AccumulateStep<E, kSquares, kVec>(
          columns, valid_rows,
          [&](int c, E(&out)[kVec]) { SharedVector<kVec>(xs + c * Tile::kCols + j, out); },
          [&](int r, E(&out)[kVec]) {
            SharedVector<kVec>(tile + (first_row + r) * Tile::kCols + j, out);
          },
          sums, squares);
    }
    // Every warp is done with the stage before warp 0 copies chunk + kStages into it.
    __syncthreads();
    if (warp == 0 && chunk + kStages < chunks) {
      FenceSharedForBulkCopies();
      queue_chunk(chunk + kStages);
    }
  }
  WriteRowSums<E, kSquares>(sums, squares, lane, block_row0 + first_row, valid_rows, columns, out,
                            out_stride, segment_stride, partials);
}

// out[(c0 + c) out_stride + i] = sum over parts p (in order) of
// scratch[(p kThinColumns + c) length + i], for c < columns and i < length: the parts' sums of
// RowsKernel's column segments (length = rows) or of ColumnsKernel's row chunks (length = cols).
template <typename E>
__global__ void __launch_bounds__(kThreads)
    PartSumsKernel(const E* __restrict__ scratch, int64_t length, int64_t parts, int c0,
                   int columns, E* __restrict__ out, int64_t out_stride) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int c = static_cast<int>(t / length);
  const int64_t i = t % length;
  if (c >= columns) return;
  E total = Zero<E>();
  for (int64_t p = 0; p < parts; ++p) {
    total = Add(total, scratch[(p * kThinColumns + c) * length + i]);
  }
  out[(c0 + c) * out_stride + i] = total;
}

// Queues PartSumsKernel over `columns` vectors of `length`.
template <typename E>
absl::Status LaunchPartSums(const E* scratch, int64_t length, int64_t parts, int c0, int columns,
                            E* out, int64_t out_stride, cudaStream_t stream) {
  const int64_t threads = length * columns;
  PartSumsKernel<E>
      <<<static_cast<unsigned>((threads + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
          scratch, length, parts, c0, columns, out, out_stride);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR("PartSumsKernel");
  return absl::OkStatus();
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

// Threads of a DifferenceNormsKernel block: the whole check waits for it (one block a vector), so
// as many as a block takes (with 256 it took 14 us for 8 vectors of 8192 on an H100).
constexpr int kNormThreads = 1024;

// norms[v] = ||z_v - w_v||_2 for vector v = blockIdx.x: the largest |difference| first, then the
// sum of squares of the differences divided by it (LAPACK's dnrm2 way: no overflow or underflow).
template <typename E>
__global__ void __launch_bounds__(kNormThreads)
    DifferenceNormsKernel(const E* __restrict__ z, const E* __restrict__ w, int64_t length,
                          double* __restrict__ norms) {
  const E* zv = z + static_cast<int64_t>(blockIdx.x) * length;
  const E* wv = w + static_cast<int64_t>(blockIdx.x) * length;
  double largest = 0;
  for (int64_t i = threadIdx.x; i < length; i += kNormThreads) {
    largest = StickyMax(largest, DifferenceMagnitude(zv[i], wv[i]));
  }
  largest = BlockReduce<kNormThreads>(largest, StickyMax);
  const bool scaled = largest > 0 && isfinite(largest);
  double sum = 0;
  if (scaled) {
    for (int64_t i = threadIdx.x; i < length; i += kNormThreads) {
      const double d = DifferenceMagnitude(zv[i], wv[i]) / largest;
      sum = fma(d, d, sum);
    }
  }
  sum = BlockReduce<kNormThreads>(sum, Plus);
  if (threadIdx.x == 0) norms[blockIdx.x] = scaled ? largest * sqrt(sum) : largest;
}

int64_t ColumnBlocks(int64_t cols) { return (cols + kThreads - 1) / kThreads; }
int64_t RowChunks(int64_t rows) { return (rows + kChunkRows - 1) / kChunkRows; }
template <typename E>
int64_t RowBlocks(int64_t rows) {
  return (rows + RowsPerBlock<E>() - 1) / RowsPerBlock<E>();
}

// RowsKernel's column segments for an M of this shape: one when the rows fill the device.
struct RowSegments {
  int64_t count = 1;
  int64_t columns = 0;  // each segment's length (the last may be shorter)
};
template <typename E>
RowSegments RowSegmentsOf(int64_t rows, int64_t cols) {
  const int64_t blocks = RowBlocks<E>(rows);
  if (blocks <= 0) return {.count = 1, .columns = cols};
  const int64_t wanted = (kFullGridBlocks + blocks - 1) / blocks;
  const int64_t most = std::max<int64_t>(1, cols / kMinSegmentColumns);
  const int64_t count = std::min(wanted, most);
  if (count <= 1) return {.count = 1, .columns = cols};
  int64_t length = (cols + count - 1) / count;
  length = (length + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment;
  return {.count = (cols + length - 1) / length, .columns = length};
}

// Whether StagedRowsKernel can take M X: every row of M and vector of X starts 16-byte aligned
// (so do the column segments, kSegmentAlignment elements apart) and float32's rows are whole
// 16-byte vectors (kVec 4, as RowsKernel's where it can).
template <typename E>
bool Staged(const ThinProductArgs& args) {
  return (args.cols * static_cast<int64_t>(sizeof(E))) % static_cast<int64_t>(sizeof(uint4)) == 0 &&
         reinterpret_cast<uintptr_t>(args.m) % sizeof(uint4) == 0 &&
         reinterpret_cast<uintptr_t>(args.x) % sizeof(uint4) == 0;
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
      const RowSegments segments = RowSegmentsOf<E>(args.rows, args.cols);
      const dim3 grid(static_cast<unsigned>(RowBlocks<E>(args.rows)),
                      static_cast<unsigned>(segments.count));
      const int64_t out_stride = args.out_stride > 0 ? args.out_stride : args.rows;
      // Several segments: their sums in scratch (segment y's vector c at (y kThinColumns + c)
      // rows), added below; one: straight into out.
      const bool segmented = segments.count > 1;
      E* const target = segmented ? static_cast<E*>(args.scratch) : out + c0 * out_stride;
      const int64_t target_stride = segmented ? args.rows : out_stride;
      const int64_t segment_stride = segmented ? kThinColumns * args.rows : 0;
      // 16-byte loads when every row and vector starts on a 16-byte boundary (device buffers do).
      // float32 only: for 8-byte elements two a lane took 166-186 registers (one block an SM).
      constexpr int kVec = std::is_same_v<E, float> ? 4 : 1;
      const bool vector_loads = kVec > 1 && args.cols % kVec == 0 &&
                                reinterpret_cast<uintptr_t>(args.m) % sizeof(uint4) == 0 &&
                                reinterpret_cast<uintptr_t>(args.x) % sizeof(uint4) == 0;
      const auto launch = [&](auto kernel, size_t shared_bytes) {
        if (shared_bytes > 0) {
          MATRIXD_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
              kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)));
        }
        kernel<<<grid, kThreads, shared_bytes, stream>>>(m, args.rows, args.cols, segments.columns,
                                                         x, c0, columns, target, target_stride,
                                                         segment_stride, partials);
        return absl::OkStatus();
      };
      if (args.staged && Staged<E>(args)) {
        constexpr size_t kBytes = StagedTile<E>::kSharedBytes;
        MATRIXD_RETURN_IF_ERROR(partials != nullptr
                                    ? launch(StagedRowsKernel<E, true, kVec>, kBytes)
                                    : launch(StagedRowsKernel<E, false, kVec>, kBytes));
        MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR("StagedRowsKernel");
      } else {
        if (partials != nullptr) {
          MATRIXD_RETURN_IF_ERROR(vector_loads ? launch(RowsKernel<E, true, kVec>, 0)
                                               : launch(RowsKernel<E, true, 1>, 0));
        } else {
          MATRIXD_RETURN_IF_ERROR(vector_loads ? launch(RowsKernel<E, false, kVec>, 0)
                                               : launch(RowsKernel<E, false, 1>, 0));
        }
        MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR("RowsKernel");
      }
      if (segmented) {
        MATRIXD_RETURN_IF_ERROR(LaunchPartSums(target, args.rows, segments.count, c0, columns, out,
                                               out_stride, stream));
      }
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
    MATRIXD_RETURN_IF_ERROR(LaunchPartSums(scratch, args.cols, RowChunks(args.rows), c0, columns,
                                           out, args.cols, stream));
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
    DifferenceNormsKernel<E><<<static_cast<unsigned>(s), kNormThreads, 0, stream>>>(
        static_cast<const E*>(z), static_cast<const E*>(w), length, norms);
    MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR("DifferenceNormsKernel");
    return absl::OkStatus();
  });
}

int64_t ThinProductPartials(DType dtype, int64_t rows, int64_t cols, bool transpose) {
  if (transpose) return ColumnBlocks(cols) * RowChunks(rows);
  return VisitFloatingType(dtype, [&](auto type) {
    using E = DeviceType<typename decltype(type)::type>;
    return RowBlocks<E>(rows) * RowSegmentsOf<E>(rows, cols).count;
  });
}

size_t ThinProductScratchBytes(DType dtype, int64_t rows, int64_t cols, bool transpose) {
  const size_t element = ElementSize(dtype);
  if (transpose) {
    return static_cast<size_t>(RowChunks(rows)) * static_cast<size_t>(cols) * kThinColumns *
           element;
  }
  const int64_t segments = VisitFloatingType(dtype, [&](auto type) {
    return RowSegmentsOf<DeviceType<typename decltype(type)::type>>(rows, cols).count;
  });
  if (segments <= 1) return 0;
  return static_cast<size_t>(segments) * static_cast<size_t>(rows) * kThinColumns * element;
}

absl::Status LaunchThinProduct(const ThinProductArgs& args, cudaStream_t stream) {
  if (!IsFloating(args.dtype) || args.rows <= 0 || args.cols <= 0 || args.s < 1) {
    return absl::InvalidArgumentError(absl::StrCat("thin product of a ", args.rows, "x", args.cols,
                                                   " ", DTypeName(args.dtype), " matrix with ",
                                                   args.s, " columns is not defined"));
  }
  if (args.out_stride != 0 && (args.transpose || args.out_stride < args.rows)) {
    return absl::InvalidArgumentError(
        absl::StrCat("thin product's out_stride ", args.out_stride, " with ", args.rows, " rows",
                     args.transpose ? " transposed" : "", "; want 0 or >= rows, M X only"));
  }
  return VisitFloatingType(args.dtype, [&](auto type) {
    return LaunchTyped<typename decltype(type)::type>(args, stream);
  });
}

}  // namespace matrixd::cuda
