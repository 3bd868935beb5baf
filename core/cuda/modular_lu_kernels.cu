#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "absl/status/status.h"
#include "core/cuda/balanced_residue.h"
#include "core/cuda/block_inverse.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/modular_lu_kernels.h"

namespace matrixd::cuda {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kElementwiseThreads = 256;
constexpr int kMaxElementwiseBlocks = 1 << 16;

int ElementwiseBlocks(int64_t count) {
  return static_cast<int>(std::clamp<int64_t>(
      (count + kElementwiseThreads - 1) / kElementwiseThreads, 1, kMaxElementwiseBlocks));
}

// Matrix b of the batch and its state: b is the kernel's grid coordinate along the batch.
__device__ double* MatrixOf(const ResidueBatch& batch, int b) {
  return batch.a + static_cast<int64_t>(b) * batch.n * batch.n;
}

// ---- The leaf: one thread block factors a diagonal block of at most kMaxLeafWidth columns and
// inverts it, in one launch ----
//
// The leaf is a chain of w dependent steps, each too small to spread over several thread blocks
// (at most 63 x 63 entries): a grid-wide barrier per step would cost more than the step. So one
// block of 1024 threads takes the whole leaf with one barrier per step: the pivot search is a
// ballot every warp evaluates alike (no shared result to publish), rows are never moved in shared
// memory (a row's slot stays put and the pivots' order is kept apart), and every thread updates at
// most four entries a step with both products reduced side by side (MulMinusMul). The factors then
// stay in shared memory for the inverse; only the inverse's pieces and the row moves (for
// ApplyLeafRowsKernel) leave the block.

constexpr int kLeafThreads = 1024;
constexpr int kLeafWarps = kLeafThreads / 32;
constexpr int kLeafStride = kMaxLeafWidth + 1;  // shared row stride (odd: no bank conflicts)
constexpr int kLeafColumnsPerLane = kMaxLeafWidth / 32;
// Entries of the block per thread: row tid / kLeafColumnGroups, columns tid % kLeafColumnGroups
// + k kLeafColumnGroups.
constexpr int kLeafColumnGroups = kLeafThreads / kMaxLeafWidth;
constexpr int kLeafColumnsPerThread = kMaxLeafWidth / kLeafColumnGroups;
static_assert(kLeafColumnGroups * kLeafColumnsPerThread == kMaxLeafWidth);
static_assert(kMaxLeafWidth == 64, "a slot mask of 64 bits, two ballots a column");

// What the leaf keeps in shared memory. The rows are held "division-free": step j replaces every
// row x not yet a pivot by u_jj x - x_j u_j (u_j the pivot row as held) and keeps x_j in place as
// its raw multiplier, so no step waits for an inverse (an inverse costs ~50 dependent products:
// paid per step it would dominate). A row that is the pivot of step t has been through steps
// 0..t-1 and holds s_t times its true value, s_t = product of the held pivots before t; the true
// factors follow at the end from w inverses taken in parallel: l_tj = x_j / held u_jj,
// u_tt = held u_tt / s_t and u_tc / u_tt = held u_tc / held u_tt.
struct LeafShared {
  // Slot r holds (a multiple of) the data of row origin[r] of `a`; after the steps, the factors
  // in pivot order (row t = the pivot row of step t), zero outside w x w: L below the diagonal,
  // u_tt on it, u_tc / u_tt above it (F of InvertFactoredBlockBlocked).
  double block[kMaxLeafWidth * kLeafStride];
  double inverse[kMaxLeafWidth * kLeafStride];  // L^-1 below the diagonal, U^-1 on and above
  double coupling[kCouplingWords];              // the blocked inverse's products
  double pivot_inverse[kMaxLeafWidth];          // 1 / held u_tt
  double scale[kMaxLeafWidth];                  // s_t
  double scale_inverse[kMaxLeafWidth];          // 1 / s_t
  double inverse_diagonal[kMaxLeafWidth];       // 1 / u_tt
  int64_t origin[kMaxLeafWidth];
  int64_t moved_position[kMaxLeafWidth];  // rows below the block that took a slot's data,
  int64_t moved_origin[kMaxLeafWidth];    // and whose data that is
  int pivot_slot[kMaxLeafWidth];          // the slot of step t's pivot row
  int moved_count;
  int below_swaps;           // exchanges with rows below the block
  unsigned long long found;  // first row below the block with a pivot
};

// The held pivot of step t.
__device__ double HeldPivot(const LeafShared& s, int t) {
  return s.block[s.pivot_slot[t] * kLeafStride + t];
}

// x[e] for the lane's columns lane + 32 e, selected without indexing registers at run time.
__device__ double LaneColumn(const double (&x)[kLeafColumnsPerLane], int t) {
  double v = 0.0;
#pragma unroll
  for (int e = 0; e < kLeafColumnsPerLane; ++e) {
    if (e == t / 32) v = x[e];
  }
  return __shfl_sync(kFullMask, v, t % 32);
}

// Column j has no non-zero entry in the slots not yet pivots: looks below the block, kLeafWarps
// rows at a time (one warp each), for the first row whose entry becomes non-zero once eliminated
// with the pivot rows of steps 0..j-1 as held, and puts it in `slot` (free), whose data goes to
// that row. Returns that row of `a`, or -1 when there is none (the matrix is singular). Called by
// every thread; the result is the same in all.
__device__ int64_t PivotFromBelow(const BalancedModulus& f, const double* __restrict__ a, int64_t n,
                                  int64_t c, int w, int j, int slot, LeafShared& s) {
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32;
  const int warp = tid / 32;
  if (tid == 0) s.found = ULLONG_MAX;
  __syncthreads();
  for (int64_t base = c + w; base < n; base += kLeafWarps) {
    const int64_t i = base + warp;
    double x[kLeafColumnsPerLane] = {};
    int64_t origin = i;
    if (i < n) {  // uniform in the warp
      // Rows already swapped out of the block hold their data only in the block's origin rows:
      // `a` itself is permuted after the leaf.
      for (int q = 0; q < s.moved_count; ++q) {
        if (s.moved_position[q] == i) origin = s.moved_origin[q];
      }
#pragma unroll
      for (int e = 0; e < kLeafColumnsPerLane; ++e) {
        const int col = lane + 32 * e;
        if (col < w) x[e] = a[origin * n + c + col];
      }
      for (int t = 0; t < j; ++t) {
        const double xt = LaneColumn(x, t);
        const double* pivot_row = s.block + s.pivot_slot[t] * kLeafStride;
        const double d = pivot_row[t];
#pragma unroll
        for (int e = 0; e < kLeafColumnsPerLane; ++e) {
          const int col = lane + 32 * e;
          if (col > t && col < w) x[e] = f.MulMinusMul(d, x[e], xt, pivot_row[col]);
        }
      }
      if (LaneColumn(x, j) != 0.0 && lane == 0) {
        atomicMin(&s.found, static_cast<unsigned long long>(i));
      }
    }
    __syncthreads();
    const unsigned long long found = s.found;
    if (found != ULLONG_MAX) {
      if (static_cast<unsigned long long>(i) == found) {
#pragma unroll
        for (int e = 0; e < kLeafColumnsPerLane; ++e) {
          const int col = lane + 32 * e;
          if (col < w) s.block[slot * kLeafStride + col] = x[e];
        }
        if (lane == 0) {
          // Row i takes the slot's data (an exchange of two rows); the slot takes row i's.
          int q = 0;
          while (q < s.moved_count && s.moved_position[q] != i) ++q;
          if (q == s.moved_count) {
            s.moved_position[q] = i;
            ++s.moved_count;
          }
          s.moved_origin[q] = s.origin[slot];
          s.origin[slot] = origin;
          ++s.below_swaps;
        }
      }
      __syncthreads();
      return static_cast<int64_t>(found);
    }
    __syncthreads();  // every thread has read `found` before the next group may set it
  }
  return -1;
}

// The exclusive prefix products s_t of the held pivots (warp 0) and of their inverses (warp 1),
// two entries per lane.
__device__ void PrefixProducts(const BalancedModulus& f, int w, LeafShared& s) {
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (warp > 1) return;
  auto value = [&](int t) {
    if (t >= w) return 1.0;
    return warp == 0 ? HeldPivot(s, t) : s.pivot_inverse[t];
  };
  const double first = value(2 * lane);
  double inclusive = f.Mul(first, value(2 * lane + 1));
  for (int offset = 1; offset < 32; offset *= 2) {
    const double before = __shfl_up_sync(kFullMask, inclusive, offset);
    if (lane >= offset) inclusive = f.Mul(inclusive, before);
  }
  double exclusive = __shfl_up_sync(kFullMask, inclusive, 1);
  if (lane == 0) exclusive = 1.0;
  double* out = warp == 0 ? s.scale : s.scale_inverse;
  if (2 * lane < w) out[2 * lane] = exclusive;
  if (2 * lane + 1 < w) out[2 * lane + 1] = f.Mul(exclusive, first);
}

// The w steps of the division-free elimination (see LeafShared), its entries unreduced (|x| <= 2p)
// except each column from the step before its own on (then balanced). Returns false, with
// the state set singular, when a column has no pivot in or below the block. Every thread computes
// the same slot mask and pivots from ballots over the column, so the steps need one barrier each.
__device__ bool EliminateLeaf(const BalancedModulus& f, const double* __restrict__ a, int64_t n,
                              int64_t c, int w, LeafShared& s, ModularLuState* state) {
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32;
  const int row = tid / kLeafColumnGroups;
  const unsigned long long slots = w == 64 ? ~0ull : (1ull << w) - 1;
  unsigned long long used = 0;  // slots whose rows have been pivots
  for (int j = 0; j < w; ++j) {
    const bool low = lane < w && s.block[lane * kLeafStride + j] != 0.0;
    const bool high = lane + 32 < w && s.block[(lane + 32) * kLeafStride + j] != 0.0;
    const unsigned long long non_zero =
        __ballot_sync(kFullMask, low) |
        (static_cast<unsigned long long>(__ballot_sync(kFullMask, high)) << 32);
    const unsigned long long candidates = non_zero & ~used & slots;
    int r;
    if (candidates == 0) {
      r = __ffsll(static_cast<long long>(~used & slots)) - 1;
      if (PivotFromBelow(f, a, n, c, w, j, r, s) < 0) {
        if (tid == 0) state->status = 1;
        return false;
      }
    } else {
      r = __ffsll(static_cast<long long>(candidates)) - 1;
    }
    used |= 1ull << r;
    if (tid == 0) s.pivot_slot[j] = r;
    // Step j writes only columns right of j in rows not yet pivots: it reads column j and the
    // pivot row, which no thread writes during the step.
    // Entries stay unreduced (|x| <= 2p, MulMinusMulLazy) except column j + 1, the next step's
    // pivot column: its zero test and its use as d and m need balanced residues.
    if (row < w && ((used >> row) & 1) == 0) {
      const double* pivot_row = s.block + r * kLeafStride;
      double* x = s.block + row * kLeafStride;
      const double d = pivot_row[j];
      const double m = x[j];
      double next = 0.0;
      bool has_next = false;
#pragma unroll
      for (int k = 0; k < kLeafColumnsPerThread; ++k) {
        const int col = tid % kLeafColumnGroups + k * kLeafColumnGroups;
        if (col > j && col < w) {
          const double y = f.MulMinusMulLazy(d, x[col], m, pivot_row[col]);
          x[col] = y;
          if (col == j + 1) {
            next = y;
            has_next = true;
          }
        }
      }
      // Once per thread, not once per entry (the reduction outside the unrolled loop).
      if (has_next) x[j + 1] = f.Reduce(next);
    }
    __syncthreads();
  }
  return true;
}

// The held rows to the true factors in pivot order (LeafShared: the unit upper triangle u_tc / u_tt
// above the diagonal), zero outside w x w; 1/u_tt (zero from w on); the
// leaf's pivots and row exchanges into the state's determinant. Called by every thread.
__device__ void FinishFactors(const BalancedModulus& f, int w, LeafShared& s,
                              ModularLuState* state) {
  const int tid = static_cast<int>(threadIdx.x);
  for (int t = tid; t < w; t += kLeafThreads) s.pivot_inverse[t] = f.Inverse(HeldPivot(s, t));
  __syncthreads();
  PrefixProducts(f, w, s);
  // The sign of the pivots' order as a permutation of the slots: the parity of its inversions.
  int inversions = 0;
  if (tid < w) {
    for (int u = tid + 1; u < w; ++u) inversions += s.pivot_slot[u] < s.pivot_slot[tid] ? 1 : 0;
  }
  const int odd = __syncthreads_count(inversions & 1);  // also the barrier after PrefixProducts
  const int row = tid / kLeafColumnGroups;
  double factors[kLeafColumnsPerThread];
#pragma unroll
  for (int k = 0; k < kLeafColumnsPerThread; ++k) {
    const int col = tid % kLeafColumnGroups + k * kLeafColumnGroups;
    factors[k] = 0.0;
    if (row < w && col < w) {
      const double x = s.block[s.pivot_slot[row] * kLeafStride + col];
      // l_tc = x / held u_cc; u_tt = x / s_t; u_tc / u_tt = x / held u_tt.
      factors[k] = f.Mul(x, row > col    ? s.pivot_inverse[col]
                            : row == col ? s.scale_inverse[row]
                                         : s.pivot_inverse[row]);
    }
  }
  for (int t = tid; t < kMaxLeafWidth; t += kLeafThreads) {
    // s_t / held u_tt = 1 / u_tt; zero outside w (the blocked inverse's padding).
    s.inverse_diagonal[t] = t < w ? f.Mul(s.pivot_inverse[t], s.scale[t]) : 0.0;
  }
  __syncthreads();  // every held row read before the factors overwrite them
#pragma unroll
  for (int k = 0; k < kLeafColumnsPerThread; ++k) {
    s.block[row * kLeafStride + tid % kLeafColumnGroups + k * kLeafColumnGroups] = factors[k];
  }
  __syncthreads();
  // det of the leaf's rows = product of u_tt with the sign of every exchange, over warp 0.
  if (tid < 32) {
    double product = 1.0;
    for (int t = tid; t < w; t += 32) product = f.Mul(product, s.block[t * kLeafStride + t]);
    for (int offset = 16; offset > 0; offset /= 2) {
      product = f.Mul(product, __shfl_xor_sync(kFullMask, product, offset));
    }
    if (tid == 0) {
      const double det = f.Mul(state->determinant, product);
      state->determinant = (odd + s.below_swaps) % 2 == 0 ? det : -det;
    }
  }
}

// The lower triangle (m = 0) or the upper one read transposed (m = 1) of a shared 64 x 64 array.
__device__ StrictLowerView TriangleOf(double* a, int m) {
  return m == 0 ? LowerTriangleOf(a, kLeafStride) : UpperTriangleOf(a, kLeafStride);
}

// D^-1 = U^-1 L^-1 from the factors in s.block (L below the diagonal, u_ii on it, u_ij / u_ii
// above it: FinishFactors), by blocks (core/cuda/block_inverse.h, InvertFactoredBlockBlocked in
// the same order), as pieces kPieceBase high + low at low_out (stride w) and low_out + w^2. The
// two unit triangular inverses (L^-1 and (u_ij / u_ii)^-1) are taken side by side in s.inverse:
// 7 barriers in all, where row sweeps took one per row.
__device__ void InvertLeaf(const BalancedModulus& f, int w, LeafShared& s,
                           double* __restrict__ low_out) {
  constexpr int n = kBlockedInverseOrder;
  static_assert(n == kMaxLeafWidth && 2 * n <= kLeafThreads);
  double* __restrict__ high_out = low_out + w * w;
  const int tid = static_cast<int>(threadIdx.x);
  // The 8 x 8 diagonal blocks: one thread per column of each matrix.
  if (tid < 2 * n) {
    const int m = tid / n;
    const int col = tid % n;
    InvertBaseBlockColumn(f, TriangleOf(s.block, m), TriangleOf(s.inverse, m),
                          col - col % kTriangularBaseOrder, col % kTriangularBaseOrder);
  }
  __syncthreads();
  // Pairs of s x s blocks: entry e of the level = (matrix, pair, i, j), both products of the
  // level's pairs in one pass each.
  for (int level = 0; level < kBlockedLevels; ++level) {
    const int order = LevelOrder(level);
    const int per_matrix = n / 2 * order;  // n / (2 order) pairs of order^2 entries
    for (int e = tid; e < 2 * per_matrix; e += kLeafThreads) {
      const int m = e / per_matrix;
      const int r = e % per_matrix;
      const int ij = r % (order * order);
      const int first = r / (order * order) * 2 * order;
      s.coupling[e] = CouplingTimesInverse(f, TriangleOf(s.block, m), TriangleOf(s.inverse, m),
                                           first, order, ij / order, ij % order);
    }
    __syncthreads();
    for (int e = tid; e < 2 * per_matrix; e += kLeafThreads) {
      const int m = e / per_matrix;
      const int r = e % per_matrix;
      const int ij = r % (order * order);
      const int first = r / (order * order) * 2 * order;
      const int i = ij / order;
      const int j = ij % order;
      const StrictLowerView y = TriangleOf(s.inverse, m);
      y(first + order + i, first + j) =
          LowerLeftOfInverse(f, y, s.coupling + (e - ij), first, order, i, j);
    }
    __syncthreads();
  }
  // U^-1 = Uh^-1 diag(1/u) on and above the diagonal.
  for (int idx = tid; idx < n * n; idx += kLeafThreads) {
    const int i = idx / n;
    const int t = idx % n;
    double& entry = s.inverse[i * kLeafStride + t];
    if (t >= i) entry = UpperInverseEntry(f, entry, s.inverse_diagonal, i, t);
  }
  __syncthreads();
  // D^-1: row tid / kProductTile, columns tid % kProductTile + 16 k.
  constexpr int kProductTile = n * n / kLeafThreads;
  constexpr int kProductStep = n / kProductTile;
  static_assert(kProductTile * kProductStep == n && kProductStep * n == kLeafThreads);
  const int i = tid / kProductStep;
  const int j0 = tid % kProductStep;
  if (i < w) {
    double entries[kProductTile];
    InverseProductRow<kProductTile>(f, s.inverse, kLeafStride, w, i, j0, kProductStep, entries);
#pragma unroll
    for (int k = 0; k < kProductTile; ++k) {
      const int j = j0 + k * kProductStep;
      if (j < w) {
        const double high = HighPiece(entries[k]);
        low_out[i * w + j] = LowPiece(entries[k], high);
        high_out[i * w + j] = high;
      }
    }
  }
}

// One thread block per matrix of the batch (blockIdx.x), LeafShared in dynamic shared memory.
__global__ void __launch_bounds__(kLeafThreads)
    FactorLeafKernel(ResidueBatch batch, int64_t c, int w, LeafScratch scratch, int slot) {
  const int b = static_cast<int>(blockIdx.x);
  ModularLuState* state = batch.states + b;
  if (state->status != 0) return;
  const BalancedModulus f = batch.moduli[b];
  const double* __restrict__ a = MatrixOf(batch, b);
  const int64_t n = batch.n;
  extern __shared__ __align__(16) unsigned char leaf_memory[];
  LeafShared& s = *reinterpret_cast<LeafShared*>(leaf_memory);
  const int tid = static_cast<int>(threadIdx.x);
  for (int idx = tid; idx < w * w; idx += kLeafThreads) {
    const int r = idx / w;
    const int col = idx - r * w;
    s.block[r * kLeafStride + col] = a[(c + r) * n + c + col];
  }
  for (int r = tid; r < w; r += kLeafThreads) s.origin[r] = c + r;
  if (tid == 0) {
    s.moved_count = 0;
    s.below_swaps = 0;
  }
  __syncthreads();
  if (!EliminateLeaf(f, a, n, c, w, s, state)) return;

  // The row moves for ApplyLeafRowsKernel: row c + t takes the data of the pivot row of step t,
  // each row below that gave its data to a slot takes the slot's.
  int* __restrict__ rows =
      scratch.rows + (static_cast<int64_t>(b) * scratch.slots + slot) * kLeafRowWords;
  for (int t = tid; t < w; t += kLeafThreads) {
    rows[1 + 2 * t] = static_cast<int>(c + t);
    rows[2 + 2 * t] = static_cast<int>(s.origin[s.pivot_slot[t]]);
  }
  for (int q = tid; q < s.moved_count; q += kLeafThreads) {
    rows[1 + 2 * (w + q)] = static_cast<int>(s.moved_position[q]);
    rows[2 + 2 * (w + q)] = static_cast<int>(s.moved_origin[q]);
  }
  if (tid == 0) rows[0] = w + s.moved_count;

  FinishFactors(f, w, s, state);
  InvertLeaf(f, w, s,
             scratch.inverse_pieces +
                 (static_cast<int64_t>(b) * scratch.slots + slot) * kLeafInverseWords);
}

// ---- Row moves ----

constexpr int kRowsThreads = 256;
constexpr int kRowsColumns = 32;  // columns per thread block, one per lane
constexpr int kRowsGroups = kRowsThreads / kRowsColumns;
constexpr int kMaxRowMoves = 2 * kMaxLeafWidth;

// Columns along blockIdx.x (kRowsColumns each, from first_col), the batch along blockIdx.y. Every
// move of a column is read before any is written, so the moves (a permutation of at most
// 2 kMaxLeafWidth rows) take one memory latency, not one per exchange.
__global__ void __launch_bounds__(kRowsThreads)
    ApplyLeafRowsKernel(ResidueBatch batch, int64_t first_col, int64_t end_col, int64_t c, int w,
                        LeafScratch scratch, int slot) {
  const int b = static_cast<int>(blockIdx.y);
  if (batch.states[b].status != 0) return;
  double* __restrict__ a = MatrixOf(batch, b);
  const int64_t n = batch.n;
  const int* __restrict__ rows =
      scratch.rows + (static_cast<int64_t>(b) * scratch.slots + slot) * kLeafRowWords;
  __shared__ int destination[kMaxRowMoves];
  __shared__ int source[kMaxRowMoves];
  __shared__ double values[kMaxRowMoves][kRowsColumns];
  const int tid = static_cast<int>(threadIdx.x);
  const int count = rows[0];
  for (int e = tid; e < count; e += kRowsThreads) {
    destination[e] = rows[1 + 2 * e];
    source[e] = rows[2 + 2 * e];
  }
  __syncthreads();
  const int lane = tid % kRowsColumns;
  const int group = tid / kRowsColumns;
  const int64_t col = first_col + static_cast<int64_t>(blockIdx.x) * kRowsColumns + lane;
  const bool leaf_column = col >= c && col < c + w;
  // The diagonal block is never read again (its inverse is kept): its rows move only outside it.
  auto moves = [&](int e) {
    return col < end_col && destination[e] != source[e] && !(leaf_column && destination[e] < c + w);
  };
  for (int e = group; e < count; e += kRowsGroups) {
    if (moves(e)) values[e][lane] = a[static_cast<int64_t>(source[e]) * n + col];
  }
  __syncthreads();
  for (int e = group; e < count; e += kRowsGroups) {
    if (moves(e)) a[static_cast<int64_t>(destination[e]) * n + col] = values[e][lane];
  }
}

// ---- Elementwise ----

// Matrices of the batch a thread writes from each entry it reads.
constexpr int kResiduesPerEntry = 8;

// kResiduesPerEntry matrices of the batch along blockIdx.y, each entry read once for all of them.
// No __restrict__: a batch of one converts in place (each entry read and written by the same
// thread).
__global__ void __launch_bounds__(kElementwiseThreads)
    BalancedResiduesKernel(ResidueBatch batch, const int64_t* entries) {
  static_assert(sizeof(double) == sizeof(int64_t));
  __shared__ BalancedModulus moduli[kResiduesPerEntry];
  const int first = static_cast<int>(blockIdx.y) * kResiduesPerEntry;
  const int matrices = min(kResiduesPerEntry, batch.count - first);
  if (threadIdx.x < matrices) moduli[threadIdx.x] = batch.moduli[first + threadIdx.x];
  __syncthreads();
  const int64_t count = batch.n * batch.n;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kElementwiseThreads + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * kElementwiseThreads) {
    const int64_t entry = entries[i];
#pragma unroll
    for (int k = 0; k < kResiduesPerEntry; ++k) {
      if (k < matrices) MatrixOf(batch, first + k)[i] = moduli[k].FromSigned(entry);
    }
  }
}

// The balanced residue of a value landed from the host (PinnedStaging::UploadInPieces), int32 or
// int64. An int32 value v takes Reduce(v): |v| < 2^31 <= 2^50 p, and no 64-bit integer division.
template <typename Value>
__device__ double ValueResidue(const BalancedModulus& f, Value v) {
  if constexpr (sizeof(Value) == sizeof(int32_t)) {
    return f.Reduce(static_cast<double>(v));
  } else {
    return f.FromSigned(v);
  }
}

// One matrix's values as they land from the host.
template <typename Value>
__global__ void __launch_bounds__(kElementwiseThreads)
    ValueResiduesKernel(BalancedModulus f, const Value* __restrict__ values, int64_t count,
                        double* __restrict__ residues) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kElementwiseThreads + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * kElementwiseThreads) {
    residues[i] = ValueResidue(f, values[i]);
  }
}

// Landed rows written transposed: a tile of kTransposeTile x kTransposeTile per thread block,
// read along the rows of A (blockIdx.x: A's columns), written along the rows of A^T (blockIdx.y:
// the landed rows), the tile's odd stride keeping shared memory free of bank conflicts.
constexpr int kTransposeTile = 32;
constexpr int kTransposeTileRows = 8;
constexpr int kTransposeThreads = kTransposeTile * kTransposeTileRows;
template <typename Value>
__global__ void __launch_bounds__(kTransposeThreads)
    TransposedResiduesKernel(BalancedModulus f, const Value* __restrict__ values, int64_t rows,
                             int64_t n, int64_t first_row, double* __restrict__ residues) {
  __shared__ double tile[kTransposeTile][kTransposeTile + 1];
  const int64_t column0 = static_cast<int64_t>(blockIdx.x) * kTransposeTile;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTransposeTile;
  const int x = static_cast<int>(threadIdx.x);
  for (int y = static_cast<int>(threadIdx.y); y < kTransposeTile; y += kTransposeTileRows) {
    const int64_t row = row0 + y;
    const int64_t column = column0 + x;
    if (row < rows && column < n) tile[y][x] = ValueResidue(f, values[row * n + column]);
  }
  __syncthreads();
  for (int y = static_cast<int>(threadIdx.y); y < kTransposeTile; y += kTransposeTileRows) {
    const int64_t column = column0 + y;
    const int64_t row = row0 + x;
    if (row < rows && column < n) residues[column * n + first_row + row] = tile[x][y];
  }
}

template <typename Value>
absl::Status LaunchTransposedResidues(cudaStream_t stream, const BalancedModulus& modulus,
                                      const Value* values, int64_t rows, int64_t n,
                                      int64_t first_row, double* residues) {
  if (rows == 0 || n == 0) return absl::OkStatus();
  const dim3 grid(static_cast<unsigned>((n + kTransposeTile - 1) / kTransposeTile),
                  static_cast<unsigned>((rows + kTransposeTile - 1) / kTransposeTile));
  TransposedResiduesKernel<Value><<<grid, dim3(kTransposeTile, kTransposeTileRows), 0, stream>>>(
      modulus, values, rows, n, first_row, residues);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(TransposedResiduesKernel<Value>);
  return absl::OkStatus();
}

template <typename Value>
absl::Status LaunchValueResidues(cudaStream_t stream, const BalancedModulus& modulus,
                                 const Value* values, int64_t count, double* residues) {
  if (count == 0) return absl::OkStatus();
  ValueResiduesKernel<Value><<<ElementwiseBlocks(count), kElementwiseThreads, 0, stream>>>(
      modulus, values, count, residues);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(ValueResiduesKernel<Value>);
  return absl::OkStatus();
}

__global__ void __launch_bounds__(kElementwiseThreads)
    ResetStatesKernel(ModularLuState* states, int count) {
  const int b = static_cast<int>(blockIdx.x) * kElementwiseThreads + static_cast<int>(threadIdx.x);
  if (b >= count) return;
  states[b].determinant = 1.0;
  states[b].status = 0;
}

// Rows x cols kernels: rows along the grid's y (no division per entry), columns along x, the
// batch along z.
dim3 RowsGrid(int64_t rows, int64_t cols, int batch) {
  return dim3(static_cast<unsigned>(
                  std::min<int64_t>((cols + kElementwiseThreads - 1) / kElementwiseThreads, 1024)),
              static_cast<unsigned>(std::clamp<int64_t>(rows, 1, 65535)),
              static_cast<unsigned>(batch));
}

__global__ void __launch_bounds__(kElementwiseThreads)
    SplitPiecesKernel(ResidueBatch batch, int64_t b_offset, int depth, int64_t cols,
                      double* __restrict__ all_pieces, int64_t pieces_stride) {
  const int m = static_cast<int>(blockIdx.z);
  if (batch.states[m].status != 0) return;
  const double* __restrict__ b = MatrixOf(batch, m) + b_offset;
  const int64_t ldb = batch.n;
  double* __restrict__ pieces = all_pieces + m * pieces_stride;
  for (int64_t s = blockIdx.y; s < depth; s += gridDim.y) {
    for (int64_t v = static_cast<int64_t>(blockIdx.x) * kElementwiseThreads + threadIdx.x; v < cols;
         v += static_cast<int64_t>(gridDim.x) * kElementwiseThreads) {
      const double x = b[s * ldb + v];
      const double high = HighPiece(x);
      pieces[s * 2 * cols + v] = LowPiece(x, high);
      pieces[s * 2 * cols + cols + v] = high;
    }
  }
}

// Entries of a block a thread takes in one pass, their loads issued together.
constexpr int kReduceUnroll = 4;

// Row and column of entry e of a rows x cols block read in row order: 32-bit division where the
// block allows it (every block of a matrix of order up to 65535).
__device__ __forceinline__ void RowAndColumn(int64_t e, int64_t cols, bool narrow, int64_t& row,
                                             int64_t& col) {
  if (narrow) {
    const auto e32 = static_cast<uint32_t>(e);
    const auto cols32 = static_cast<uint32_t>(cols);
    row = e32 / cols32;
    col = e32 - static_cast<uint32_t>(row) * cols32;
  } else {
    row = e / cols;
    col = e - row * cols;
  }
}

// The block's entries flattened in row order (a thread for every entry however narrow the block,
// consecutive threads on consecutive entries of a row), kReduceUnroll of them a thread at a time:
// on the H100 one entry a thread and a thread block a row left the reductions at ~1.7 TB/s
// (docs/benchmarks.md, the exact determinant's phases).
__global__ void __launch_bounds__(kElementwiseThreads)
    ReduceProductKernel(ResidueBatch batch, int64_t c_offset, int64_t rows, int64_t cols,
                        PieceProduct products, bool assign) {
  const int m = static_cast<int>(blockIdx.y);
  if (batch.states[m].status != 0) return;
  const BalancedModulus f = batch.moduli[m];
  double* __restrict__ c = MatrixOf(batch, m) + c_offset;
  const int64_t ldc = batch.n;
  const double* __restrict__ product =
      products.data != nullptr ? products.data + m * products.stride : nullptr;
  const int64_t total = rows * cols;
  const bool narrow = total <= int64_t{UINT32_MAX};
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kElementwiseThreads;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kElementwiseThreads + threadIdx.x;
       first < total; first += kReduceUnroll * stride) {
    int64_t at[kReduceUnroll];  // in c
    double x[kReduceUnroll];
    double low[kReduceUnroll];
    double high[kReduceUnroll];
#pragma unroll
    for (int u = 0; u < kReduceUnroll; ++u) {
      const int64_t e = first + u * stride;
      at[u] = -1;
      if (e >= total) continue;
      int64_t i = 0;
      int64_t v = 0;
      RowAndColumn(e, cols, narrow, i, v);
      at[u] = i * ldc + v;
      if (!assign) x[u] = c[at[u]];
      if (product != nullptr) {
        const double* t = product + i * products.ld + v;
        low[u] = t[0];
        high[u] = t[products.high_offset];
      }
    }
#pragma unroll
    for (int u = 0; u < kReduceUnroll; ++u) {
      if (at[u] < 0) continue;
      if (product == nullptr) {
        c[at[u]] = f.Reduce(x[u]);
      } else {
        // Each piece's sum is below 2^53; reduced, the three terms stay below 2^48.
        const double lo = f.Reduce(low[u]);
        const double hi = f.Reduce(high[u]);
        c[at[u]] = assign ? f.Reduce(lo + kPieceBase * hi) : f.Reduce(x[u] - lo - kPieceBase * hi);
      }
    }
  }
}

}  // namespace

absl::Status LaunchBalancedResidues(cudaStream_t stream, const ResidueBatch& batch,
                                    const int64_t* entries) {
  const dim3 grid(ElementwiseBlocks(batch.n * batch.n),
                  static_cast<unsigned>((batch.count + kResiduesPerEntry - 1) / kResiduesPerEntry));
  BalancedResiduesKernel<<<grid, kElementwiseThreads, 0, stream>>>(batch, entries);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(BalancedResiduesKernel);
  return absl::OkStatus();
}

absl::Status LaunchBalancedResiduesOfValues(cudaStream_t stream, const BalancedModulus& modulus,
                                            const int32_t* values, int64_t count,
                                            double* residues) {
  return LaunchValueResidues(stream, modulus, values, count, residues);
}

absl::Status LaunchBalancedResiduesOfValues(cudaStream_t stream, const BalancedModulus& modulus,
                                            const int64_t* values, int64_t count,
                                            double* residues) {
  return LaunchValueResidues(stream, modulus, values, count, residues);
}

absl::Status LaunchTransposedResiduesOfRows(cudaStream_t stream, const BalancedModulus& modulus,
                                            const int32_t* values, int64_t rows, int64_t n,
                                            int64_t first_row, double* residues) {
  return LaunchTransposedResidues(stream, modulus, values, rows, n, first_row, residues);
}

absl::Status LaunchTransposedResiduesOfRows(cudaStream_t stream, const BalancedModulus& modulus,
                                            const int64_t* values, int64_t rows, int64_t n,
                                            int64_t first_row, double* residues) {
  return LaunchTransposedResidues(stream, modulus, values, rows, n, first_row, residues);
}

absl::Status LaunchResetStates(cudaStream_t stream, const ResidueBatch& batch) {
  ResetStatesKernel<<<ElementwiseBlocks(batch.count), kElementwiseThreads, 0, stream>>>(
      batch.states, batch.count);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(ResetStatesKernel);
  return absl::OkStatus();
}

absl::Status LaunchFactorLeaf(cudaStream_t stream, const ResidueBatch& batch, int64_t c, int w,
                              const LeafScratch& scratch, int slot) {
  // Above the 48 KiB a kernel gets without asking (the factors and the inverse side by side).
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
      FactorLeafKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sizeof(LeafShared)));
  FactorLeafKernel<<<batch.count, kLeafThreads, sizeof(LeafShared), stream>>>(batch, c, w, scratch,
                                                                              slot);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(FactorLeafKernel);
  return absl::OkStatus();
}

absl::Status LaunchApplyLeafRows(cudaStream_t stream, const ResidueBatch& batch, int64_t first_col,
                                 int64_t end_col, int64_t c, int w, const LeafScratch& scratch,
                                 int slot) {
  const dim3 grid(static_cast<unsigned>((end_col - first_col + kRowsColumns - 1) / kRowsColumns),
                  static_cast<unsigned>(batch.count));
  ApplyLeafRowsKernel<<<grid, kRowsThreads, 0, stream>>>(batch, first_col, end_col, c, w, scratch,
                                                         slot);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(ApplyLeafRowsKernel);
  return absl::OkStatus();
}

absl::Status LaunchSplitPieces(cudaStream_t stream, const ResidueBatch& batch, int64_t b_offset,
                               int depth, int64_t cols, double* pieces, int64_t pieces_stride) {
  SplitPiecesKernel<<<RowsGrid(depth, cols, batch.count), kElementwiseThreads, 0, stream>>>(
      batch, b_offset, depth, cols, pieces, pieces_stride);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(SplitPiecesKernel);
  return absl::OkStatus();
}

absl::Status LaunchReduceProduct(cudaStream_t stream, const ResidueBatch& batch, int64_t c_offset,
                                 int64_t rows, int64_t cols, const PieceProduct& product,
                                 ProductUse use) {
  if (use == ProductUse::kAssign && product.data == nullptr) {
    return absl::InternalError("LaunchReduceProduct: kAssign without a product");
  }
  if (rows <= 0 || cols <= 0) return absl::OkStatus();
  const int64_t passes = (rows * cols + kElementwiseThreads * kReduceUnroll - 1) /
                         (kElementwiseThreads * kReduceUnroll);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(passes, kMaxElementwiseBlocks)),
                  static_cast<unsigned>(batch.count));
  ReduceProductKernel<<<grid, kElementwiseThreads, 0, stream>>>(
      batch, c_offset, rows, cols, product, use == ProductUse::kAssign);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(ReduceProductKernel);
  return absl::OkStatus();
}

}  // namespace matrixd::cuda
