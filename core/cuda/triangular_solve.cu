#include <cooperative_groups.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cuda/atomic>
#include <span>

#include "core/cuda/device_element.cuh"
#include "core/cuda/triangular_solve.h"

// The synchronization-free dense triangular solve (the scheme of Liu et al.'s sparse SpTRSV, on
// dense row blocks), with MAGMA's inverted diagonal blocks (magmablas_dtrsv on dtrtri_diag):
// the chain from one row block to the next is then one B x B product instead of B dependent
// substitution steps. On an H100 (docs/benchmarks.md, issue 15) a solve is bound both by that
// chain (~2 us a step: the counter, a fence, a barrier) and by each block streaming its row of
// tiles alone; hence the near tiles (the kernel's comment) and one read of x a lane (Tile). Each
// element of x as its own flag (polled with relaxed atomic loads) was slower for op = H (147
// against 102 us at n = 4096), and polling with weak loads read stale values: not used. Thread-
// block clusters whose blocks hand x on through shared memory (the kernel's comment) took a
// 4096 triangle from 104-110 to 95 us and the estimator's LU solve from 221 to 192 us (the same
// H100, interleaved runs, 2026-11-27); helper blocks sharing a step's far tiles inside the cluster
// and the owner's tiles asked of L2 early gained nothing more (docs/benchmarks.md).
//
// Solve order: op(A) is lower triangular when A is lower and op = N, or A is upper and op = H;
// then row blocks go first to last ("forward"), otherwise last to first. The ticket counter hands
// out steps in that order to clusters of thread blocks as they start, so a block only ever waits
// for blocks that are already running: no deadlock whatever the scheduler does. A block publishes
// only after it has read every earlier block's x, so the count of published steps says which
// parts of x are ready.
//
// Tile of op(A) for row block p and column block q (both B wide, cut at n):
// op = N: M(i, j) = A(p B + i, q B + j), column-major from a + p B + q B lda;
// op = H: M(i, j) = conj(A(q B + j, p B + i)), i.e. tile[j + i lda] from a + q B + p B lda.
// Either way warps read along the contiguous dimension of A (see TileOf below).
//
// Two shapes: B = 64 with 256 threads, the next tile's loads issued before the current one is
// used (16 elements a thread, twice); B = 128 with 512 threads, one tile at a time (32 elements
// a thread): half as many steps in the chain, twice the rows per block to stream. No 256-row
// shape: its tile in registers would be 64 elements a thread at 1024 threads, 128 registers for
// float64 with nothing left for the rest (65536 a multiprocessor), and 512 KiB does not fit in
// shared memory either.

namespace matrixd::cuda {
namespace {

constexpr int kWarpSize = 32;

template <int kBlockRows, int kBlockThreads, bool kLoadAhead>
struct Shape {
  static constexpr int kBlock = kBlockRows;
  static constexpr int kThreads = kBlockThreads;
  static constexpr bool kAhead = kLoadAhead;
  static constexpr int kWarps = kThreads / kWarpSize;
  static constexpr int kPerThread = kBlock * kBlock / kThreads;  // tile elements a thread holds
  static_assert(kBlock % kWarps == 0 && kBlock % kWarpSize == 0 && kThreads % kBlock == 0);
};
using Shape64 = Shape<64, 256, true>;
using Shape128 = Shape<128, 512, false>;

// ---- Arithmetic on float, double, float2 and double2 beyond device_element.cuh ----

// c - a b, fused (one rounding a real multiply-add).
__device__ __forceinline__ float MulSub(float a, float b, float c) { return fmaf(-a, b, c); }
__device__ __forceinline__ double MulSub(double a, double b, double c) { return fma(-a, b, c); }
__device__ __forceinline__ float2 MulSub(float2 a, float2 b, float2 c) {
  return make_float2(fmaf(a.y, b.y, fmaf(-a.x, b.x, c.x)), fmaf(-a.y, b.x, fmaf(-a.x, b.y, c.y)));
}
__device__ __forceinline__ double2 MulSub(double2 a, double2 b, double2 c) {
  return make_double2(fma(a.y, b.y, fma(-a.x, b.x, c.x)), fma(-a.y, b.x, fma(-a.x, b.y, c.y)));
}

// num / den for complex types, scaled by den's larger part so |den|^2 neither overflows nor
// underflows.
template <typename C>
__device__ __forceinline__ C DivideComplex(C num, C den) {
  const auto scale = fmax(fabs(den.x), fabs(den.y));
  const auto re = den.x / scale;
  const auto im = den.y / scale;
  const auto norm = (re * re + im * im) * scale;
  C q;
  q.x = (num.x * re + num.y * im) / norm;
  q.y = (num.y * re - num.x * im) / norm;
  return q;
}
__device__ __forceinline__ float2 Divide(float2 num, float2 den) { return DivideComplex(num, den); }
__device__ __forceinline__ double2 Divide(double2 num, double2 den) {
  return DivideComplex(num, den);
}

// Rows of the block of `block` rows that starts at row `first` of n.
__device__ __forceinline__ int BlockRows(int64_t n, int64_t first, int block) {
  return n - first < block ? static_cast<int>(n - first) : block;
}

// ---- Diagonal blocks ----

// Up to kMaxInvertedTriangles triangles of one order, by value: one launch inverts the diagonal
// blocks of all of them (LU's L and U), each kernel of which only fills part of the chip.
template <typename E>
struct InvertedTriangles {
  const E* a[kMaxInvertedTriangles];
  int64_t lda[kMaxInvertedTriangles];
  bool lower[kMaxInvertedTriangles];
  bool unit[kMaxInvertedTriangles];
  E* inverse[kMaxInvertedTriangles];
};

// Rows of D solved together: a panel is kPanelRows rows of D against all columns left of its
// end; one broadcast load of a panel column (kPanelRows contiguous elements, 16-byte aligned)
// feeds kPanelRows independent multiply-adds.
constexpr int kPanelRows = 8;
// Threads of one block: the warps beyond the columns only help to stage D (loads in flight).
constexpr int kInvertThreads = 256;

// The shared memory of one thread block of InvertDiagonalBlocksKernel: D's panels, packed (panel
// p holds rows p R .. p R + R - 1 against columns 0 .. p R + R - 1, column by column, R =
// kPanelRows), then the block's columns of the inverse, y[i kPitch + column] (a row of y a warp
// reads at once: conflict-free; one column down a warp, for the output, conflict-free too since
// kPitch is odd), then the reciprocals of D's diagonal (SafeReciprocal).
template <typename E, int kBlock>
struct InverseShape {
  static constexpr int kPanels = kBlock / kPanelRows;
  // Columns of D^-1 one thread block computes: all of them, except complex128 at 128 rows, whose
  // columns together would not fit in shared memory beside the panels.
  static constexpr int kColumns = sizeof(E) > 8 && kBlock == 128 ? 32 : kBlock;
  static constexpr int kPitch = kColumns + 1;
  static constexpr int kPanelElements = kPanelRows * kPanelRows * kPanels * (kPanels + 1) / 2;
  static constexpr int kReciprocalOffset = kPanelElements + kBlock * kPitch;
  static constexpr size_t kSharedBytes = (kReciprocalOffset + kBlock) * sizeof(E);
  static constexpr size_t kMaxSharedBytes = 227 * 1024;  // a thread block's on sm_90
  static_assert(kBlock % kPanelRows == 0 && kWarpSize % kPanelRows == 0);
  static_assert(kColumns % kWarpSize == 0 && kColumns <= kInvertThreads);
  static_assert(kSharedBytes <= kMaxSharedBytes);
  static_assert(kReciprocalOffset * sizeof(E) % 16 == 0);  // LoadPanelColumn's alignment
};

// 1 / d where d lies well inside the exponent range, else 0 (for complex types, always 0): then
// Quotient below divides.
__device__ __forceinline__ float SafeReciprocal(float d) {
  const float m = fabsf(d);
  return m >= 0x1p-100f && m <= 0x1p100f ? 1.0f / d : 0.0f;
}
__device__ __forceinline__ double SafeReciprocal(double d) {
  const double m = fabs(d);
  return m >= 0x1p-900 && m <= 0x1p900 ? 1.0 / d : 0.0;
}
__device__ __forceinline__ float2 SafeReciprocal(float2) { return Zero<float2>(); }
__device__ __forceinline__ double2 SafeReciprocal(double2) { return Zero<double2>(); }

// s / d, given r = SafeReciprocal(d) computed beforehand: where r is not 0 and s and the
// quotient are well inside the exponent range, s r corrected by one Newton step (r the correctly
// rounded reciprocal: the fast path of CUDA's own division, whose reciprocal's refinement, 6 of
// its 9 dependent steps, is then off the substitution's chain), else a division.
template <typename R>
__device__ __forceinline__ R RealQuotient(R s, R d, R r, R tiny) {
  const R q0 = s * r;
  const R q = fma(r, fma(-d, q0, s), q0);
  if (r != R(0) && (s == R(0) || (fabs(s) >= tiny && fabs(q) >= tiny))) return q;
  return s / d;
}
__device__ __forceinline__ float Quotient(float s, float d, float r) {
  return RealQuotient(s, d, r, 0x1p-100f);
}
__device__ __forceinline__ double Quotient(double s, double d, double r) {
  return RealQuotient(s, d, r, 0x1p-900);
}
__device__ __forceinline__ float2 Quotient(float2 s, float2 d, float2) { return Divide(s, d); }
__device__ __forceinline__ double2 Quotient(double2 s, double2 d, double2) { return Divide(s, d); }

// Where panel p starts.
__device__ __forceinline__ int PanelOffset(int p) {
  return kPanelRows * kPanelRows * p * (p + 1) / 2;
}

// d := the kPanelRows elements at p (shared memory, 16-byte aligned), in 16-byte loads.
__device__ __forceinline__ void LoadPanelColumn(const float* p, float (&d)[kPanelRows]) {
#pragma unroll
  for (int q = 0; q < kPanelRows / 4; ++q) {
    const float4 v = reinterpret_cast<const float4*>(p)[q];
    d[4 * q] = v.x;
    d[4 * q + 1] = v.y;
    d[4 * q + 2] = v.z;
    d[4 * q + 3] = v.w;
  }
}
__device__ __forceinline__ void LoadPanelColumn(const double* p, double (&d)[kPanelRows]) {
#pragma unroll
  for (int q = 0; q < kPanelRows / 2; ++q) {
    const double2 v = reinterpret_cast<const double2*>(p)[q];
    d[2 * q] = v.x;
    d[2 * q + 1] = v.y;
  }
}
__device__ __forceinline__ void LoadPanelColumn(const float2* p, float2 (&d)[kPanelRows]) {
#pragma unroll
  for (int q = 0; q < kPanelRows / 2; ++q) {
    const float4 v = reinterpret_cast<const float4*>(p)[q];
    d[2 * q] = make_float2(v.x, v.y);
    d[2 * q + 1] = make_float2(v.z, v.w);
  }
}
__device__ __forceinline__ void LoadPanelColumn(const double2* p, double2 (&d)[kPanelRows]) {
#pragma unroll
  for (int q = 0; q < kPanelRows; ++q) d[q] = p[q];
}

// Block (p, g, k): columns g kColumns .. of the inverse of diagonal block p of triangle k, by
// substitution on the unit vectors, as trsm does (D y = e_j, rows in order, each row's sum in
// order of its columns; multiply-adds fused).
//
// An upper triangle is solved as the lower one D'(i, k) = D(B-1-i, B-1-k) (B = kBlock), whose
// inverse is D^-1 with rows and columns reversed the same way: one code path. A partial last
// block is padded with the identity, and the padding's rows and columns are written as zeros.
//
// Thread = column j of D'^-1, its column y (zero above j) in shared memory. All the threads of a
// warp walk the same rows in the same order, from the warp's first column on, so that every
// panel element read is the same address for the whole warp (a broadcast), and a column's zeros
// above j are just part of the sums. The critical path is the warp of the first columns: for
// B = 128, sum_p (8 p) 8 + 16 * 28 = 8128 multiply-adds (2 cycles each on an H100's FP64 units
// with 16 lanes a scheduler) and 128 dependent quotients (docs/accuracy.md, issue 15).
template <typename E, int kBlock>
__global__ void __launch_bounds__(kInvertThreads)
    InvertDiagonalBlocksKernel(InvertedTriangles<E> triangles, int64_t n) {
  using Shape = InverseShape<E, kBlock>;
  constexpr int kPitch = Shape::kPitch;
  extern __shared__ __align__(16) unsigned char invert_shared[];
  E* panels = reinterpret_cast<E*>(invert_shared);
  E* y = panels + Shape::kPanelElements;
  E* reciprocals = panels + Shape::kReciprocalOffset;  // of D's diagonal

  // The triangle's fields by selects: indexing the parameter by blockIdx would copy it to local
  // memory.
  static_assert(kMaxInvertedTriangles == 2);
  const bool second = blockIdx.z != 0;
  const auto pick = [&](const auto& field) { return second ? field[1] : field[0]; };
  const int64_t lda = pick(triangles.lda);
  const bool lower = pick(triangles.lower);
  const bool unit = pick(triangles.unit);
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kBlock;
  const int rows = BlockRows(n, first, kBlock);
  const E* d = pick(triangles.a) + first + first * lda;  // D(i, k) = d[i + k lda]
  const auto original = [&](int i) { return lower ? i : kBlock - 1 - i; };  // D' to D
  const int c0 = static_cast<int>(blockIdx.y) * Shape::kColumns;  // the block's first column

  // Stage the panels this block reads (columns c0 and on) at once: kBatch loads in flight a
  // thread, down D's columns (coalesced).
  constexpr int kBatch = 16;
  constexpr int kStride = kInvertThreads * kBatch;
  static_assert(kBlock * kBlock % kStride == 0);
  for (int e0 = 0; e0 < kBlock * kBlock; e0 += kStride) {
    E v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = e0 + u * kInvertThreads + static_cast<int>(threadIdx.x);
      const int i = e % kBlock;  // of D'
      const int k = e / kBlock;
      const int oi = original(i);
      const int ok = original(k);
      const bool inside = oi < rows && ok < rows;
      v[u] = Zero<E>();
      if (k == i && (unit || !inside)) {
        v[u] = One<E>();
      } else if (k <= i && k >= c0 && inside) {
        v[u] = d[oi + ok * lda];
      }
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = e0 + u * kInvertThreads + static_cast<int>(threadIdx.x);
      const int i = e % kBlock;
      const int k = e / kBlock;
      if (k == i) reciprocals[i] = SafeReciprocal(v[u]);
      if (k >= c0 && k / kPanelRows <= i / kPanelRows) {
        panels[PanelOffset(i / kPanelRows) + k * kPanelRows + i % kPanelRows] = v[u];
      }
    }
  }
  __syncthreads();

  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  if (warp >= Shape::kColumns / kWarpSize) return;
  const int column = warp * kWarpSize + lane;  // in the block's share
  const int j = c0 + column;                   // of D'
  const int j0 = c0 + warp * kWarpSize;        // the warp's first: rows above it are zero
  E* own = y + column;                         // y(i, j) = own[i kPitch]
  for (int p = j0 / kPanelRows; p < Shape::kPanels; ++p) {
    const int i0 = p * kPanelRows;
    const E* panel = panels + PanelOffset(p);
    // The panel's rows of D' y = e_j: e_j's, less D' times the rows of y solved before them.
    E s[kPanelRows];
#pragma unroll
    for (int r = 0; r < kPanelRows; ++r) s[r] = (i0 + r == j) ? One<E>() : Zero<E>();
    // kAhead columns of the panel and rows of y in registers, each reloaded (kAhead columns on)
    // right after use: one warp a scheduler would otherwise wait out every load's latency.
    // i0 - j0 is a multiple of kAhead, and the last loads (columns up to i0 + kAhead - 1 of the
    // panel, rows of y not yet solved) stay inside the panel and y, unused.
    constexpr int kAhead = 4;
    static_assert(kPanelRows % kAhead == 0);
    E dk[kAhead][kPanelRows];
    E yk[kAhead];
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      LoadPanelColumn(panel + (j0 + u) * kPanelRows, dk[u]);
      yk[u] = own[(j0 + u) * kPitch];
    }
    for (int k = j0; k < i0; k += kAhead) {
#pragma unroll
      for (int u = 0; u < kAhead; ++u) {
#pragma unroll
        for (int r = 0; r < kPanelRows; ++r) s[r] = MulSub(dk[u][r], yk[u], s[r]);
        LoadPanelColumn(panel + (k + kAhead + u) * kPanelRows, dk[u]);
        yk[u] = own[(k + kAhead + u) * kPitch];
      }
    }
    E reciprocal[kPanelRows];
    LoadPanelColumn(reciprocals + i0, reciprocal);
    // Then its own triangle, a row at a time; column i0 + r of the panel holds row r's pivot and
    // the multipliers of the rows below it.
#pragma unroll
    for (int r = 0; r < kPanelRows; ++r) {
      E dk[kPanelRows];
      LoadPanelColumn(panel + (i0 + r) * kPanelRows, dk);
      E yi = unit ? s[r] : Quotient(s[r], dk[r], reciprocal[r]);
      if (i0 + r < j) yi = Zero<E>();  // not 0 / 0 at a zero pivot above j
      own[(i0 + r) * kPitch] = yi;
#pragma unroll
      for (int q = r + 1; q < kPanelRows; ++q) s[q] = MulSub(dk[q], yi, s[q]);
    }
  }
  __syncwarp();

  // The warp's columns, each down the warp (coalesced), zero above the diagonal and in the
  // padding.
  E* inverse = pick(triangles.inverse) + static_cast<int64_t>(blockIdx.x) * kBlock * kBlock;
  for (int c = 0; c < kWarpSize; ++c) {
    const int jc = j0 + c;
    const int oj = original(jc);
    const E* y_column = y + warp * kWarpSize + c;
#pragma unroll
    for (int m = 0; m < kBlock / kWarpSize; ++m) {
      const int i = lane + m * kWarpSize;
      const int oi = original(i);
      const bool nonzero = i >= jc && oi < rows && oj < rows;
      inverse[oi + oj * kBlock] = nonzero ? y_column[i * kPitch] : Zero<E>();
    }
  }
}

// ---- The solve ----

// A tile of op(A) (B x B, zero beyond rows x cols) in registers, and the thread's part of its
// product with a vector. Two layouts, both coalesced:
// op = N: thread t holds row i = t % B, columns j = g kPerThread + k (g = t / B);
// op = H: lane l of warp w holds rows i = w + kWarps r and columns j = l + 32 h.
// The vector is kColumns columns, multiplied together: the tile is read once for all of them.
template <typename E, bool kAdjoint, typename S, int kColumns>
struct Tile;

template <typename E, typename S, int kColumns>
struct Tile<E, false, S, kColumns> {
  static constexpr int kBlock = S::kBlock;
  static constexpr int kThreads = S::kThreads;
  static constexpr int kPerThread = S::kPerThread;
  E m[kPerThread];

  // The thread's partial sums of its row, one a column of the vectors.
  struct Sums {
    E value[kColumns] = {};
  };

  __device__ __forceinline__ void Load(const E* tile, int64_t ld, int rows, int cols) {
    const int i = static_cast<int>(threadIdx.x) % kBlock;
    const int j0 = static_cast<int>(threadIdx.x) / kBlock * kPerThread;
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int j = j0 + k;
      m[k] = i < rows && j < cols ? tile[i + j * ld] : Zero<E>();
    }
  }

  // sums(c) += M v(c, .), v(c, j) for c < kColumns, j < kBlock. The lanes of a warp share j0:
  // each lane reads one of their kPerThread elements of each column and shuffles hand it to the
  // others (one read a lane, not kPerThread: on an H100 that took a 4096 triangle from 136 to
  // 113 us, docs/benchmarks.md).
  static_assert(kPerThread <= kWarpSize && kBlock % kWarpSize == 0);
  template <typename Vector>
  __device__ __forceinline__ void MultiplyAdd(Vector v, Sums& sums) const {
    const int j0 = static_cast<int>(threadIdx.x) / kBlock * kPerThread;
    E mine[kColumns];
#pragma unroll
    for (int c = 0; c < kColumns; ++c) {
      mine[c] = v(c, j0 + static_cast<int>(threadIdx.x) % kWarpSize % kPerThread);
    }
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
#pragma unroll
      for (int c = 0; c < kColumns; ++c) {
        sums.value[c] = MulAdd(m[k], Shuffle(mine[c], k), sums.value[c]);
      }
    }
  }

  // out[c kBlock + i] := row i's sum of column c over all threads, then sums := 0. Every thread
  // calls it; out is visible to all on return. partial: kColumns kThreads elements of shared
  // memory.
  static __device__ __forceinline__ void Reduce(Sums& sums, E* partial, E* out) {
#pragma unroll
    for (int c = 0; c < kColumns; ++c) partial[c * kThreads + threadIdx.x] = sums.value[c];
    __syncthreads();
    static_assert(kColumns * kBlock <= kThreads);
    if (threadIdx.x < kColumns * kBlock) {
      const int c = static_cast<int>(threadIdx.x) / kBlock;
      const int i = static_cast<int>(threadIdx.x) % kBlock;
      const E* column = partial + c * kThreads;
      E s = column[i];
#pragma unroll
      for (int g = 1; g < kThreads / kBlock; ++g) s = Add(s, column[i + g * kBlock]);
      out[threadIdx.x] = s;
    }
    __syncthreads();
#pragma unroll
    for (int c = 0; c < kColumns; ++c) sums.value[c] = Zero<E>();
  }
};

template <typename E, typename S, int kColumns>
struct Tile<E, true, S, kColumns> {
  static constexpr int kWarps = S::kWarps;
  static constexpr int kRowsPerWarp = S::kBlock / kWarps;
  static constexpr int kColumnsPerLane = S::kBlock / kWarpSize;
  static_assert(kRowsPerWarp * kColumnsPerLane == S::kPerThread);
  E m[kRowsPerWarp][kColumnsPerLane];

  struct Sums {
    E value[kColumns][kRowsPerWarp] = {};
  };

  __device__ __forceinline__ void Load(const E* tile, int64_t ld, int rows, int cols) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int i = warp + kWarps * r;
#pragma unroll
      for (int h = 0; h < kColumnsPerLane; ++h) {
        const int j = lane + kWarpSize * h;
        m[r][h] = i < rows && j < cols ? Conj(tile[j + i * ld]) : Zero<E>();
      }
    }
  }

  template <typename Vector>
  __device__ __forceinline__ void MultiplyAdd(Vector v, Sums& sums) const {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    // One element of v at a time (h outer): with two columns, float64's 128-row kernel holds
    // kColumns kRowsPerWarp sums beside its tile, and all of v's kColumnsPerLane elements at once
    // would not fit as well.
#pragma unroll
    for (int h = 0; h < kColumnsPerLane; ++h) {
#pragma unroll
      for (int c = 0; c < kColumns; ++c) {
        const E vj = v(c, lane + kWarpSize * h);
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
          sums.value[c][r] = MulAdd(m[r][h], vj, sums.value[c][r]);
        }
      }
    }
  }

  static __device__ __forceinline__ void Reduce(Sums& sums, E* /*partial*/, E* out) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
#pragma unroll
    for (int c = 0; c < kColumns; ++c) {
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const E s = WarpSum(sums.value[c][r]);
        if (lane == 0) out[c * S::kBlock + warp + kWarps * r] = s;
        sums.value[c][r] = Zero<E>();
      }
    }
    __syncthreads();
  }
};

// The address of op(A)'s tile (row block `row0`, column block `col0`) in A; see the top.
template <bool kAdjoint, typename E>
__device__ __forceinline__ const E* TileOf(const E* a, int64_t lda, int64_t row0, int64_t col0) {
  return kAdjoint ? a + col0 + row0 * lda : a + row0 + col0 * lda;
}

// Flags between the thread blocks of one cluster, in shared memory: an acquire load of one's own
// (generic address), a cluster-scope fence, and a relaxed store to another block's (a generic
// address from map_shared_rank).
__device__ __forceinline__ unsigned LoadAcquireCluster(const unsigned* flag) {
  unsigned value;
  asm volatile("ld.acquire.cluster.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}
__device__ __forceinline__ void FenceCluster() {
  asm volatile("fence.acq_rel.cluster;" ::: "memory");
}
__device__ __forceinline__ void StoreRelaxedCluster(unsigned* flag, unsigned value) {
  asm volatile("st.relaxed.cluster.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
// The cluster barrier in two halves: arrive (nothing ordered) and wait.
__device__ __forceinline__ void ClusterArrive() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void ClusterWait() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}

// Waits until `solved` >= needed and returns the count seen. Thread 0 polls with acquire loads;
// the barrier passes what it saw (and the ordering) to the rest of the block. The two slots
// alternate so that thread 0 never overwrites a value another thread has yet to read.
__device__ __forceinline__ int WaitUntilSolved(unsigned* solved, int needed, int* seen, int& slot) {
  if (threadIdx.x == 0) {
    ::cuda::atomic_ref<unsigned, ::cuda::thread_scope_device> counter(*solved);
    unsigned value = counter.load(::cuda::memory_order_acquire);
    while (value < static_cast<unsigned>(needed))
      value = counter.load(::cuda::memory_order_acquire);
    seen[slot] = static_cast<int>(value);
  }
  __syncthreads();
  const int ready = seen[slot];
  slot ^= 1;
  return ready;
}

// Asks L2 for the kElements contiguous elements at p (a multiple of 128 bytes a thread), one
// 128-byte line at a time, unrolled so that it holds no registers beyond the address. A hint
// only: nothing is read into registers and no result depends on it.
template <int kThreads, int kElements, typename E>
__device__ __forceinline__ void PrefetchToL2(const E* p) {
  constexpr int kLineBytes = 128;
  constexpr int kLinesPerThread = kElements * static_cast<int>(sizeof(E)) / kLineBytes / kThreads;
  static_assert(kLinesPerThread * kLineBytes * kThreads == kElements * sizeof(E));
  const char* line = reinterpret_cast<const char*>(p) + threadIdx.x * kLineBytes;
#pragma unroll
  for (int k = 0; k < kLinesPerThread; ++k) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(line + k * kThreads * kLineBytes));
  }
}

// sync[0]: the ticket counter; sync[1]: steps published (x written for them).
//
// Row block p (solve step `step`) computes x_p = D_p^-1 (b_p - sum_{s < step} T_s x_s), T_s the
// tile of op(A) against the block solved at step s. With `near` > 0 (near tiles N_k = D_p^-1 T_s
// for the k = step - s <= near steps just before, from ComputeNearTiles) it computes instead
// c_p = D_p^-1 (b_p - sum_{s < step - near} T_s x_s) while those steps are still being solved, and
// x_p = c_p - sum_k N_k x_{step-k} at the end: after the last wait only one product, one reduction
// and the publication remain on the chain from one block to the next (issue 15).
// The block's work is a sequence of items, one tile each: the far tiles (s < step - near), the
// diagonal inverse, then the near tiles (s = step - near ... step - 1, i.e. item - 1).
// b and x are n x kColumns, column-major with leading dimension n; every step does its work for
// all columns at once (the tiles and the chain's waits are shared by them). Thread t < kColumns
// kBlock owns row t % kBlock of column t / kBlock in the block's shared vectors and in b and x.
//
// Clusters: the grid is launched in clusters of C blocks (C = 1: none), a ticket a cluster, so
// that its blocks take C consecutive steps (ticket C + rank; blocks past the last step idle). A
// block hands its x to the later blocks of its own cluster directly, into their shared memory
// (`received`, (C - 1) kColumns kBlock elements of dynamic shared memory, one slot a rank) with a
// flag each, instead of through L2 and the device-scope fence of the counter, which every block
// also advances for the steps of later clusters (atomically: its increment may overtake the one
// of the block before it in its cluster, but a block only publishes after it has read every
// earlier x, which makes any count a prefix: whoever sees the count c also sees x of steps < c, by
// causality through the flags). The x a block stores in global memory precedes its flags, so the
// cluster-scope fence waits for it too: the hand-off inside a cluster is cheaper, not free.
template <typename E, bool kAdjoint, typename S, int kColumns>
__global__ void __launch_bounds__(S::kThreads)
    TriangularSolveKernel(const E* a, int64_t n, int64_t lda, int blocks, bool forward,
                          const E* inverse, const E* near_tiles, int near, const E* b, E* x,
                          unsigned* sync) {
  namespace cg = cooperative_groups;
  constexpr int kBlock = S::kBlock;
  constexpr int kVector = kColumns * kBlock;  // a step's x
  __shared__ int ticket_shared;
  __shared__ int first_shared;  // the cluster's first step (shared: kept out of the registers)
  __shared__ int seen[2];
  __shared__ unsigned received_flags[kMaxTriangularSolveCluster];
  __shared__ E partial[kColumns * S::kThreads];
  __shared__ E sums_shared[kVector];
  __shared__ E residual[kVector];
  __shared__ E c_shared[kVector];
  extern __shared__ __align__(16) unsigned char received_bytes[];
  E* received = reinterpret_cast<E*>(received_bytes);  // [rank][kVector]: x of the earlier ranks
  using TileT = Tile<E, kAdjoint, S, kColumns>;

  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int cluster_size = static_cast<int>(cluster.num_blocks());
  if (threadIdx.x < kMaxTriangularSolveCluster) received_flags[threadIdx.x] = 0;
  if (threadIdx.x == 0 && rank == 0) ticket_shared = static_cast<int>(atomicAdd(&sync[0], 1u));
  // Every block of the cluster has started and zeroed its flags, and the ticket is drawn; the
  // second half of the barrier, at the end, keeps rank 0's ticket readable until all have read it.
  cluster.sync();
  if (threadIdx.x == 0) first_shared = *cluster.map_shared_rank(&ticket_shared, 0) * cluster_size;
  __syncthreads();
  ClusterArrive();
  const int step = first_shared + rank;
  if (step >= blocks) {
    ClusterWait();
    return;
  }
  const auto block_of = [&](int s) { return forward ? s : blocks - 1 - s; };
  const int64_t row0 = static_cast<int64_t>(block_of(step)) * kBlock;
  const int rows = BlockRows(n, row0, kBlock);
  const int64_t tile_elements = static_cast<int64_t>(kBlock) * kBlock;
  const E* diagonal_inverse = inverse + block_of(step) * tile_elements;
  const int far_count = step > near ? step - near : 0;
  const int items = step + 1;  // far_count far tiles, the inverse, step - far_count near tiles
  // b now, off the chain from one block to the next (b is never written by another block).
  const int own_row = static_cast<int>(threadIdx.x) % kBlock;
  const int64_t own_column = static_cast<int64_t>(threadIdx.x) / kBlock;
  const bool owns_row = own_column < kColumns && own_row < rows;
  const int64_t own_index = own_column * n + row0 + own_row;  // in b and x
  const E b_row = owns_row ? b[own_index] : Zero<E>();
  // The step whose x an item multiplies (none for the inverse).
  const auto step_of = [&](int item) { return item < far_count ? item : item - 1; };

  const auto load = [&](TileT& tile, int item) {
    if (item == far_count) {
      tile.Load(diagonal_inverse, kBlock, rows, rows);
      return;
    }
    const int s = step_of(item);
    const int64_t col0 = static_cast<int64_t>(block_of(s)) * kBlock;
    const int cols = BlockRows(n, col0, kBlock);
    if (item < far_count) {
      tile.Load(TileOf<kAdjoint>(a, lda, row0, col0), lda, rows, cols);
    } else {
      // N_k of this row block, stored as ComputeNearTiles says (op = H: its adjoint).
      const int k = step - s;
      const E* tile_k =
          near_tiles + ((k - 1) * static_cast<int64_t>(blocks) + block_of(step)) * tile_elements;
      tile.Load(tile_k, kBlock, rows, cols);
    }
  };
  typename TileT::Sums sums;
  int ready = 0;
  int slot = 0;
  const auto process = [&](const TileT& tile, int item) {
    if (item == far_count) {
      // c := D^-1 (b - the far tiles' sum).
      TileT::Reduce(sums, partial, sums_shared);
      if (threadIdx.x < kVector) {
        residual[threadIdx.x] = owns_row ? Sub(b_row, sums_shared[threadIdx.x]) : Zero<E>();
      }
      __syncthreads();
      tile.MultiplyAdd([&](int c, int j) { return residual[c * kBlock + j]; }, sums);
      TileT::Reduce(sums, partial, c_shared);
      return;
    }
    // sums += tile times x's block s, once x's block s is there.
    const int s = step_of(item);
    const int64_t col0 = static_cast<int64_t>(block_of(s)) * kBlock;
    const int cols = BlockRows(n, col0, kBlock);
    if (s >= first_shared) {
      // From a block of this cluster, in this block's shared memory once its flag is up.
      const int source = s - first_shared;
      if (threadIdx.x == 0) {
        while (LoadAcquireCluster(&received_flags[source]) == 0) {
        }
      }
      __syncthreads();
      const E* xs = received + source * kVector;
      tile.MultiplyAdd([&](int c, int j) { return j < cols ? xs[c * kBlock + j] : Zero<E>(); },
                       sums);
      return;
    }
    if (ready <= s) ready = WaitUntilSolved(&sync[1], s + 1, seen, slot);
    // .cg: x was written by other blocks during this kernel; L1 is not coherent with them.
    tile.MultiplyAdd(
        [&](int c, int j) { return j < cols ? __ldcg(x + c * n + col0 + j) : Zero<E>(); }, sums);
  };
  TileT current;
  if constexpr (S::kAhead) {
    // The next item's loads in flight while the block waits for (and multiplies by) the current
    // one's x.
    TileT next;
    load(current, 0);
    for (int item = 0; item < items; ++item) {
      if (item + 1 < items) load(next, item + 1);
      process(current, item);
      current = next;
    }
  } else {
    for (int item = 0; item < items; ++item) {
      // The inverse is loaded right after a wait: asked of L2 before the tile ahead of it, so
      // that the load finds it there instead of in memory (where the triangle streamed through
      // L2 since the previous solve has sent it). Not for op = H: there it made float64's kernel
      // spill (128 registers, ptxas -v), which costs on every step.
      if constexpr (!kAdjoint) {
        if (item + 1 == far_count) PrefetchToL2<S::kThreads, kBlock * kBlock>(diagonal_inverse);
      }
      load(current, item);
      process(current, item);
    }
  }
  if (far_count < step) TileT::Reduce(sums, partial, sums_shared);            // the near tiles' sum
  const int later = min(first_shared + cluster_size, blocks) - first_shared;  // ranks with a step
  if (owns_row) {
    const E value = far_count < step ? Sub(c_shared[threadIdx.x], sums_shared[threadIdx.x])
                                     : c_shared[threadIdx.x];
    x[own_index] = value;
    for (int r = rank + 1; r < later; ++r) {
      cluster.map_shared_rank(received, r)[rank * kVector + threadIdx.x] = value;
    }
  }
  // Publish: the barrier, then thread 0's fences and stores — the pattern of cooperative groups'
  // grid sync (the barrier orders the block's writes before thread 0's fence, which makes them
  // visible at the fence's scope before the flags and the counter move).
  __syncthreads();
  if (threadIdx.x == 0) {
    if (rank + 1 < later) {
      FenceCluster();
      for (int r = rank + 1; r < later; ++r) {
        StoreRelaxedCluster(cluster.map_shared_rank(&received_flags[rank], r), 1u);
      }
    }
    ::cuda::atomic_ref<unsigned, ::cuda::thread_scope_device> published(sync[1]);
    if (step + 1 == blocks) {
      // The last step: nobody waits for it. Once every other block has published (each after its
      // last wait, and every ticket drawn: this block's cluster drew the last), nothing reads or
      // writes the counters again: zero them for the next solve, in place of a memset launch
      // before each one.
      while (published.load(::cuda::memory_order_relaxed) < static_cast<unsigned>(step)) {
      }
      sync[0] = 0;
      sync[1] = 0;
    } else {
      __threadfence();
      published.fetch_add(1u, ::cuda::memory_order_relaxed);
    }
  }
  ClusterWait();
}

template <typename E>
__global__ void PermuteVectorKernel(const E* src, const int* rows, int64_t n, int columns,
                                    bool scatter, E* dst) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = rows[i];
    for (int c = 0; c < columns; ++c) {
      const int64_t offset = c * n;
      if (scatter) {
        dst[offset + row] = src[offset + i];
      } else {
        dst[offset + i] = src[offset + row];
      }
    }
  }
}

// Clusters past this many blocks need the kernel's non-portable attribute.
constexpr int kMaxPortableCluster = 8;

int BlocksOf(int64_t n, int block) { return static_cast<int>((n + block - 1) / block); }

// The columns one launch of shape S solves together: 1 for complex128, whose tiles already take
// most of a thread's registers (a second column's sums would spill them).
template <typename E, typename S>
inline constexpr int kLaunchColumns = sizeof(E) > 8 ? 1 : kMaxTriangularSolveColumns;

// One solve's arguments, as the launchers below pass them on.
template <typename E>
struct SolveLaunch {
  DeviceTriangle<E> triangle;
  const E* inverse = nullptr;
  const E* near_tiles = nullptr;
  int near = 0;
  bool adjoint = false;
  unsigned* sync = nullptr;
  cudaStream_t stream = nullptr;
  int cluster = 1;
};

template <typename E, typename S, int kColumns, bool kAdjoint>
cudaError_t LaunchSolveKernel(const SolveLaunch<E>& launch, int cluster, const E* b, E* x) {
  const auto kernel = TriangularSolveKernel<E, kAdjoint, S, kColumns>;
  if (cluster > kMaxPortableCluster) {
    const cudaError_t allowed =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (allowed != cudaSuccess) return allowed;
  }
  const DeviceTriangle<E>& t = launch.triangle;
  const int blocks = BlocksOf(t.n, S::kBlock);
  const int clusters = (blocks + cluster - 1) / cluster;
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(clusters * cluster));
  config.blockDim = dim3(S::kThreads);
  config.dynamicSmemBytes = static_cast<size_t>(cluster - 1) * kColumns * S::kBlock * sizeof(E);
  config.stream = launch.stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  const bool forward = t.lower != kAdjoint;
  return cudaLaunchKernelEx(&config, kernel, t.a, t.n, t.lda, blocks, forward, launch.inverse,
                            launch.near_tiles, launch.near, b, x, launch.sync);
}

// In clusters of launch.cluster blocks (capped at the row blocks), or of one where the device
// cannot place them (a launch refused for its configuration runs nothing, so it can be retried).
template <typename E, typename S, int kColumns>
cudaError_t QueueSolveColumns(const SolveLaunch<E>& launch, const E* b, E* x) {
  const auto run = [&](int cluster) {
    return launch.adjoint ? LaunchSolveKernel<E, S, kColumns, true>(launch, cluster, b, x)
                          : LaunchSolveKernel<E, S, kColumns, false>(launch, cluster, b, x);
  };
  const int cluster = std::min(launch.cluster, BlocksOf(launch.triangle.n, S::kBlock));
  if (cluster <= 1) return run(1);
  const cudaError_t clustered = run(cluster);
  if (clustered == cudaSuccess) return clustered;
  (void)cudaGetLastError();  // the refusal is not sticky; clear it before the retry
  return run(1);
}

// One launch for all `columns` where the shape takes them, else one launch a column (each leaves
// the counters zero for the next).
template <typename E, typename S>
cudaError_t QueueSolve(const SolveLaunch<E>& launch, const E* b, E* x, int columns) {
  static_assert(kMaxTriangularSolveColumns == 2);
  if constexpr (kLaunchColumns<E, S> == 2) {
    if (columns == 2) return QueueSolveColumns<E, S, 2>(launch, b, x);
  }
  for (int c = 0; c < columns; ++c) {
    const int64_t offset = c * launch.triangle.n;
    const cudaError_t queued = QueueSolveColumns<E, S, 1>(launch, b + offset, x + offset);
    if (queued != cudaSuccess) return queued;
  }
  return cudaSuccess;
}

template <typename E, int kBlock>
cudaError_t QueueInvertDiagonalBlocks(const InvertedTriangles<E>& batch, int64_t n, int count,
                                      cudaStream_t stream) {
  using Shape = InverseShape<E, kBlock>;
  // Past the default 48 KiB of shared memory a block: opt in, on every launch (the attribute is
  // the current device's; setting it queues nothing).
  const cudaError_t opt_in = cudaFuncSetAttribute(InvertDiagonalBlocksKernel<E, kBlock>,
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  static_cast<int>(Shape::kSharedBytes));
  if (opt_in != cudaSuccess) return opt_in;
  const dim3 grid(static_cast<unsigned>(BlocksOf(n, kBlock)),
                  static_cast<unsigned>(kBlock / Shape::kColumns), static_cast<unsigned>(count));
  InvertDiagonalBlocksKernel<E, kBlock>
      <<<grid, kInvertThreads, Shape::kSharedBytes, stream>>>(batch, n);
  return cudaGetLastError();
}

template <typename T>
DeviceTriangle<DeviceType<T>> OnDevice(const DeviceTriangle<T>& triangle) {
  return {.a = reinterpret_cast<const DeviceType<T>*>(triangle.a),
          .n = triangle.n,
          .lda = triangle.lda,
          .lower = triangle.lower,
          .unit_diagonal = triangle.unit_diagonal};
}

}  // namespace

template <typename T>
cudaError_t LaunchInvertDiagonalBlocks(std::span<const DeviceTriangle<T>> triangles, int block,
                                       std::span<T* const> inverses, cudaStream_t stream) {
  using E = DeviceType<T>;
  const size_t count = triangles.size();
  if (!IsTriangularSolveBlock(block) || count > kMaxInvertedTriangles || inverses.size() != count) {
    return cudaErrorInvalidValue;
  }
  if (count == 0) return cudaSuccess;
  const int64_t n = triangles[0].n;
  InvertedTriangles<E> batch{};
  for (size_t k = 0; k < count; ++k) {
    if (triangles[k].n != n) return cudaErrorInvalidValue;
    const DeviceTriangle<E> t = OnDevice(triangles[k]);
    batch.a[k] = t.a;
    batch.lda[k] = t.lda;
    batch.lower[k] = t.lower;
    batch.unit[k] = t.unit_diagonal;
    batch.inverse[k] = reinterpret_cast<E*>(inverses[k]);
  }
  if (n <= 0) return cudaSuccess;
  const int triangle_count = static_cast<int>(count);
  return block == Shape64::kBlock
             ? QueueInvertDiagonalBlocks<E, Shape64::kBlock>(batch, n, triangle_count, stream)
             : QueueInvertDiagonalBlocks<E, Shape128::kBlock>(batch, n, triangle_count, stream);
}

template <typename T>
cudaError_t LaunchInvertDiagonalBlocks(DeviceTriangle<T> triangle, int block, T* inverse,
                                       cudaStream_t stream) {
  return LaunchInvertDiagonalBlocks(std::span<const DeviceTriangle<T>>(&triangle, 1), block,
                                    std::span<T* const>(&inverse, 1), stream);
}

template <typename T>
cudaError_t LaunchTriangularSolve(DeviceTriangle<T> triangle, int block, const T* inverse,
                                  bool adjoint, const T* b, T* x, void* sync, cudaStream_t stream,
                                  const T* near_tiles, int near, int columns, int cluster) {
  using E = DeviceType<T>;
  if (!IsTriangularSolveBlock(block) || near < 0 || near > kMaxNearTiles ||
      (near > 0 && near_tiles == nullptr) || columns < 1 || columns > kMaxTriangularSolveColumns ||
      cluster < 1 || cluster > kMaxTriangularSolveCluster) {
    return cudaErrorInvalidValue;
  }
  if (triangle.n <= 0) return cudaSuccess;
  const SolveLaunch<E> launch{.triangle = OnDevice(triangle),
                              .inverse = reinterpret_cast<const E*>(inverse),
                              .near_tiles = reinterpret_cast<const E*>(near_tiles),
                              .near = near,
                              .adjoint = adjoint,
                              .sync = static_cast<unsigned*>(sync),
                              .stream = stream,
                              .cluster = cluster};
  const auto* in = reinterpret_cast<const E*>(b);
  auto* out = reinterpret_cast<E*>(x);
  return block == Shape64::kBlock ? QueueSolve<E, Shape64>(launch, in, out, columns)
                                  : QueueSolve<E, Shape128>(launch, in, out, columns);
}

template <typename T>
cudaError_t LaunchPermuteVector(const T* src, const int* rows, int64_t n, bool scatter, T* dst,
                                cudaStream_t stream, int columns) {
  using E = DeviceType<T>;
  if (n <= 0 || columns <= 0) return cudaSuccess;
  constexpr int kPermuteThreads = 256;
  const int blocks =
      static_cast<int>(std::min<int64_t>((n + kPermuteThreads - 1) / kPermuteThreads, 1024));
  PermuteVectorKernel<E><<<blocks, kPermuteThreads, 0, stream>>>(
      reinterpret_cast<const E*>(src), rows, n, columns, scatter, reinterpret_cast<E*>(dst));
  return cudaGetLastError();
}

#define MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE(T)                                                    \
  template cudaError_t LaunchInvertDiagonalBlocks<T>(DeviceTriangle<T>, int, T*, cudaStream_t);    \
  template cudaError_t LaunchInvertDiagonalBlocks<T>(std::span<const DeviceTriangle<T>>, int,      \
                                                     std::span<T* const>, cudaStream_t);           \
  template cudaError_t LaunchTriangularSolve<T>(DeviceTriangle<T>, int, const T*, bool, const T*,  \
                                                T*, void*, cudaStream_t, const T*, int, int, int); \
  template cudaError_t LaunchPermuteVector<T>(const T*, const int*, int64_t, bool, T*,             \
                                              cudaStream_t, int);
MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE(float)
MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE(double)
MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE(std::complex<float>)
MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE(std::complex<double>)
#undef MATRIXD_INSTANTIATE_TRIANGULAR_SOLVE

}  // namespace matrixd::cuda
