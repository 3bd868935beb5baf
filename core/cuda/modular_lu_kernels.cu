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

// ---- The leaf: one thread block factors a diagonal block of at most kMaxLeafWidth columns ----

constexpr int kLeafThreads = 256;
constexpr int kLeafWarps = kLeafThreads / 32;
constexpr int kLeafStride = kMaxLeafWidth + 1;  // shared row stride (odd: no bank conflicts)
constexpr int kLeafColumnsPerLane = kMaxLeafWidth / 32;

// What the leaf keeps in shared memory. The rows are held "division-free": step j replaces every
// later row x by u_jj x - x_j u_j (u_j the pivot row as held) and keeps x_j in place as its raw
// multiplier, so no step waits for an inverse (an inverse costs ~50 dependent products: paid per
// step it would dominate). Every row below step j then holds s_j times its true value, with
// s_j = product of the held pivots before j; the true factors follow at the end from w inverses
// taken in parallel: l_ij = x_ij / held u_jj and u_jc = held u_jc / s_j.
struct LeafShared {
  double block[kMaxLeafWidth * kLeafStride];
  double pivot_inverse[kMaxLeafWidth];    // 1 / held u_jj
  double scale[kMaxLeafWidth];            // s_j
  double scale_inverse[kMaxLeafWidth];    // 1 / s_j
  int64_t origin[kMaxLeafWidth];          // the row of `a` whose data block row r holds now
  int64_t moved_position[kMaxLeafWidth];  // rows below the block that took a block row's data,
  int64_t moved_origin[kMaxLeafWidth];    // and whose data that is
  int moved_count;
  int swaps;
  int pivot;                 // first block row with a non-zero entry in the column
  unsigned long long found;  // first row below the block with one
};

// x[e] for the lane's columns lane + 32 e, selected without indexing registers at run time.
__device__ double LaneColumn(const double (&x)[kLeafColumnsPerLane], int t) {
  double v = 0.0;
#pragma unroll
  for (int e = 0; e < kLeafColumnsPerLane; ++e) {
    if (e == t / 32) v = x[e];
  }
  return __shfl_sync(kFullMask, v, t % 32);
}

// Column j has no non-zero entry in block rows j..w-1: looks below the block, kLeafWarps rows at a
// time (one warp each), for the first row whose entry becomes non-zero once eliminated with the
// block's rows 0..j-1 as held, and makes it block row j. Returns that row of `a`, or -1 when there
// is none (the matrix is singular). Called by every thread; the result is the same in all.
__device__ int64_t PivotFromBelow(const BalancedModulus& f, const double* __restrict__ a, int64_t n,
                                  int64_t c, int w, int j, LeafShared& s) {
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
        const double d = s.block[t * kLeafStride + t];
#pragma unroll
        for (int e = 0; e < kLeafColumnsPerLane; ++e) {
          const int col = lane + 32 * e;
          if (col > t && col < w) {
            x[e] = f.MulSub(f.Mul(d, x[e]), xt, s.block[t * kLeafStride + col]);
          }
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
          if (col < w) s.block[j * kLeafStride + col] = x[e];
        }
        if (lane == 0) {
          // Row i takes block row j's data (the swap c + j <-> i); block row j takes row i's.
          int q = 0;
          while (q < s.moved_count && s.moved_position[q] != i) ++q;
          if (q == s.moved_count) {
            s.moved_position[q] = i;
            ++s.moved_count;
          }
          s.moved_origin[q] = s.origin[j];
          s.origin[j] = origin;
        }
      }
      __syncthreads();
      return static_cast<int64_t>(found);
    }
    __syncthreads();  // every thread has read `found` before the next group may set it
  }
  return -1;
}

// The exclusive prefix products s_j of the held pivots (warp 0) and of their inverses (warp 1),
// two entries per lane.
__device__ void PrefixProducts(const BalancedModulus& f, int w, LeafShared& s) {
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (warp > 1) return;
  static_assert(kMaxLeafWidth == 64, "two entries per lane");
  auto value = [&](int t) {
    if (t >= w) return 1.0;
    return warp == 0 ? s.block[t * kLeafStride + t] : s.pivot_inverse[t];
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

// One thread block per matrix of the batch (blockIdx.x).
__global__ void __launch_bounds__(kLeafThreads)
    FactorLeafKernel(ResidueBatch batch, int64_t c, int w, LeafScratch scratch) {
  const int b = static_cast<int>(blockIdx.x);
  ModularLuState* state = batch.states + b;
  if (state->status != 0) return;
  const BalancedModulus f = batch.moduli[b];
  const double* __restrict__ a = MatrixOf(batch, b);
  const int64_t n = batch.n;
  double* __restrict__ lu = scratch.lu + b * kMaxLeafWidth * kMaxLeafWidth;
  double* __restrict__ inverse_diagonal = scratch.inverse_diagonal + b * kMaxLeafWidth;
  int* __restrict__ ipiv = scratch.ipiv + b * kMaxLeafWidth;
  __shared__ LeafShared s;
  const int tid = static_cast<int>(threadIdx.x);
  for (int idx = tid; idx < w * w; idx += kLeafThreads) {
    const int r = idx / w;
    const int col = idx - r * w;
    s.block[r * kLeafStride + col] = a[(c + r) * n + c + col];
  }
  for (int r = tid; r < w; r += kLeafThreads) s.origin[r] = c + r;
  if (tid == 0) {
    s.moved_count = 0;
    s.swaps = 0;
  }
  __syncthreads();

  for (int j = 0; j < w; ++j) {
    if (tid == 0) s.pivot = w;
    __syncthreads();
    for (int r = j + tid; r < w; r += kLeafThreads) {
      if (s.block[r * kLeafStride + j] != 0.0) atomicMin(&s.pivot, r);
    }
    __syncthreads();
    const int r = s.pivot;
    if (r == w) {
      const int64_t below = PivotFromBelow(f, a, n, c, w, j, s);
      if (below < 0) {
        if (tid == 0) state->status = 1;
        return;
      }
      if (tid == 0) {
        ipiv[j] = static_cast<int>(below);
        ++s.swaps;
      }
    } else {
      if (r != j) {
        for (int col = tid; col < w; col += kLeafThreads) {
          const double t = s.block[j * kLeafStride + col];
          s.block[j * kLeafStride + col] = s.block[r * kLeafStride + col];
          s.block[r * kLeafStride + col] = t;
        }
      }
      if (tid == 0) {
        ipiv[j] = static_cast<int>(c + r);
        if (r != j) {
          const int64_t o = s.origin[j];
          s.origin[j] = s.origin[r];
          s.origin[r] = o;
          ++s.swaps;
        }
      }
    }
    __syncthreads();
    const double d = s.block[j * kLeafStride + j];
    const int rest = w - 1 - j;
    for (int idx = tid; idx < rest * rest; idx += kLeafThreads) {
      const int i = j + 1 + idx / rest;
      const int col = j + 1 + idx % rest;
      double& x = s.block[i * kLeafStride + col];
      x = f.MulSub(f.Mul(d, x), s.block[i * kLeafStride + j], s.block[j * kLeafStride + col]);
    }
    __syncthreads();
  }

  for (int t = tid; t < w; t += kLeafThreads) {
    s.pivot_inverse[t] = f.Inverse(s.block[t * kLeafStride + t]);
  }
  __syncthreads();
  PrefixProducts(f, w, s);
  __syncthreads();
  for (int idx = tid; idx < w * w; idx += kLeafThreads) {
    const int i = idx / w;
    const int col = idx - i * w;
    const double x = s.block[i * kLeafStride + col];
    lu[idx] = f.Mul(x, i > col ? s.pivot_inverse[col] : s.scale_inverse[i]);
  }
  for (int t = tid; t < w; t += kLeafThreads) {
    inverse_diagonal[t] = f.Mul(s.pivot_inverse[t], s.scale[t]);  // s_t / held u_tt = 1 / u_tt
  }
  // det of the permuted block = product of u_tt = held u_tt / s_t, over warp 0.
  if (tid < 32) {
    double product = 1.0;
    for (int t = tid; t < w; t += 32) {
      product = f.Mul(product, f.Mul(s.block[t * kLeafStride + t], s.scale_inverse[t]));
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      product = f.Mul(product, __shfl_xor_sync(kFullMask, product, offset));
    }
    if (tid == 0) {
      const double det = f.Mul(state->determinant, product);
      state->determinant = s.swaps % 2 == 0 ? det : -det;
    }
  }
}

// ---- Row swaps ----

constexpr int kSwapThreads = 256;

// The batch along blockIdx.y.
__global__ void __launch_bounds__(kSwapThreads)
    ApplyLeafSwapsKernel(ResidueBatch batch, int64_t c, int w, LeafScratch scratch) {
  const int b = static_cast<int>(blockIdx.y);
  if (batch.states[b].status != 0) return;
  double* __restrict__ a = MatrixOf(batch, b);
  const int64_t n = batch.n;
  const double* __restrict__ lu = scratch.lu + b * kMaxLeafWidth * kMaxLeafWidth;
  const int* __restrict__ ipiv = scratch.ipiv + b * kMaxLeafWidth;
  __shared__ int pivots[kMaxLeafWidth];
  for (int j = static_cast<int>(threadIdx.x); j < w; j += kSwapThreads) pivots[j] = ipiv[j];
  __syncthreads();
  // One thread per column: it alone applies the swaps, in order, to its column.
  for (int64_t col = static_cast<int64_t>(blockIdx.x) * kSwapThreads + threadIdx.x; col < n;
       col += static_cast<int64_t>(gridDim.x) * kSwapThreads) {
    for (int j = 0; j < w; ++j) {
      const int64_t r = pivots[j];
      if (r == c + j) continue;
      double& top = a[(c + j) * n + col];
      double& other = a[r * n + col];
      const double t = top;
      top = other;
      other = t;
    }
    if (col >= c && col < c + w) {
      for (int r = 0; r < w; ++r) a[(c + r) * n + col] = lu[r * w + (col - c)];
    }
  }
}

// ---- The inverse of a leaf's diagonal block, one thread block per matrix ----

constexpr int kInverseThreads = 256;
constexpr int kInverseStride = kMaxLeafWidth + 1;  // shared row stride
// Threads per dot product in the sweeps: half the block builds L^-1, half U^-1, one row a step.
constexpr int kSweepParts = kInverseThreads / (2 * kMaxLeafWidth);
static_assert(kSweepParts >= 1 && (kSweepParts & (kSweepParts - 1)) == 0 && kSweepParts <= 32);

// Step s builds row s of L^-1 and row w - 1 - s of U^-1 (core/cuda/block_inverse.h): each reads
// only rows finished in earlier steps, so one barrier a step suffices. Thread (entry j, part)
// sums the terms part, part + kSweepParts, ... of entry j's dot product; the parts are adjacent
// lanes, added exactly by shuffles. Then every thread forms entries of D^-1 = U^-1 L^-1.
__global__ void __launch_bounds__(kInverseThreads)
    InvertLeafKernel(ResidueBatch batch, int w, LeafScratch scratch, int slot) {
  const int b = static_cast<int>(blockIdx.x);
  if (batch.states[b].status != 0) return;
  const BalancedModulus f = batch.moduli[b];
  const double* __restrict__ lu = scratch.lu + b * kMaxLeafWidth * kMaxLeafWidth;
  const double* __restrict__ inverse_diagonal = scratch.inverse_diagonal + b * kMaxLeafWidth;
  double* __restrict__ low_out =
      scratch.inverse_pieces +
      (static_cast<int64_t>(b) * kLeafInverseSlots + slot) * kLeafInverseWords;
  double* __restrict__ high_out = low_out + w * w;
  __shared__ double inverse[kMaxLeafWidth * kInverseStride];
  const int tid = static_cast<int>(threadIdx.x);
  const bool upper = tid >= kInverseThreads / 2;
  const int j = (tid % (kInverseThreads / 2)) / kSweepParts;
  const int part = tid % kSweepParts;
  for (int s = 0; s < w; ++s) {
    const int i = upper ? w - 1 - s : s;
    const bool active = j < w && (upper ? j > i : j < i);
    PieceSums sums;
    if (active) {
      sums = upper ? UpperInversePart(lu, w, inverse, kInverseStride, i, j, part, kSweepParts)
                   : LowerInversePart(lu, w, inverse, kInverseStride, i, j, part, kSweepParts);
    }
    for (int offset = 1; offset < kSweepParts; offset *= 2) {
      sums.low += __shfl_xor_sync(kFullMask, sums.low, offset);
      sums.high += __shfl_xor_sync(kFullMask, sums.high, offset);
    }
    if (part == 0) {
      if (active) {
        inverse[i * kInverseStride + j] = upper ? UpperInverseValue(f, inverse_diagonal[i], sums)
                                                : LowerInverseValue(f, lu, w, i, j, sums);
      } else if (upper && j == i) {
        inverse[i * kInverseStride + i] = inverse_diagonal[i];
      }
    }
    __syncthreads();
  }
  for (int idx = tid; idx < w * w; idx += kInverseThreads) {
    const int i = idx / w;
    const int col = idx - i * w;
    const double x = InverseProductValue(
        f, inverse, kInverseStride, i, col,
        InverseProductPart(inverse, kInverseStride, w, i, col, /*part=*/0, /*step=*/1));
    const double high = HighPiece(x);
    low_out[idx] = LowPiece(x, high);
    high_out[idx] = high;
  }
}

// ---- Elementwise ----

// The batch along blockIdx.y. No __restrict__: a batch of one converts in place (each entry read
// and written by the same thread).
__global__ void __launch_bounds__(kElementwiseThreads)
    BalancedResiduesKernel(ResidueBatch batch, const int64_t* entries) {
  static_assert(sizeof(double) == sizeof(int64_t));
  const int b = static_cast<int>(blockIdx.y);
  const BalancedModulus f = batch.moduli[b];
  double* residues = MatrixOf(batch, b);
  const int64_t count = batch.n * batch.n;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kElementwiseThreads + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * kElementwiseThreads) {
    residues[i] = f.FromSigned(entries[i]);
  }
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

__global__ void __launch_bounds__(kElementwiseThreads)
    ReduceProductKernel(ResidueBatch batch, int64_t c_offset, int64_t rows, int64_t cols,
                        PieceProduct products, bool assign) {
  const int m = static_cast<int>(blockIdx.z);
  if (batch.states[m].status != 0) return;
  const BalancedModulus f = batch.moduli[m];
  double* __restrict__ c = MatrixOf(batch, m) + c_offset;
  const int64_t ldc = batch.n;
  const double* __restrict__ product =
      products.data != nullptr ? products.data + m * products.stride : nullptr;
  for (int64_t i = blockIdx.y; i < rows; i += gridDim.y) {
    for (int64_t v = static_cast<int64_t>(blockIdx.x) * kElementwiseThreads + threadIdx.x; v < cols;
         v += static_cast<int64_t>(gridDim.x) * kElementwiseThreads) {
      double& x = c[i * ldc + v];
      if (product == nullptr) {
        x = f.Reduce(x);
      } else {
        // Each piece's sum is below 2^53; reduced, the three terms stay below 2^48.
        const double* t = product + i * products.ld + v;
        const double low = f.Reduce(t[0]);
        const double high = f.Reduce(t[products.high_offset]);
        x = assign ? f.Reduce(low + kPieceBase * high) : f.Reduce(x - low - kPieceBase * high);
      }
    }
  }
}

}  // namespace

absl::Status LaunchBalancedResidues(cudaStream_t stream, const ResidueBatch& batch,
                                    const int64_t* entries) {
  const dim3 grid(ElementwiseBlocks(batch.n * batch.n), static_cast<unsigned>(batch.count));
  BalancedResiduesKernel<<<grid, kElementwiseThreads, 0, stream>>>(batch, entries);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(BalancedResiduesKernel);
  return absl::OkStatus();
}

absl::Status LaunchResetStates(cudaStream_t stream, const ResidueBatch& batch) {
  ResetStatesKernel<<<ElementwiseBlocks(batch.count), kElementwiseThreads, 0, stream>>>(
      batch.states, batch.count);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(ResetStatesKernel);
  return absl::OkStatus();
}

absl::Status LaunchFactorLeaf(cudaStream_t stream, const ResidueBatch& batch, int64_t c, int w,
                              const LeafScratch& scratch) {
  FactorLeafKernel<<<batch.count, kLeafThreads, 0, stream>>>(batch, c, w, scratch);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(FactorLeafKernel);
  return absl::OkStatus();
}

absl::Status LaunchApplyLeafSwaps(cudaStream_t stream, const ResidueBatch& batch, int64_t c, int w,
                                  const LeafScratch& scratch) {
  const dim3 grid(static_cast<unsigned>((batch.n + kSwapThreads - 1) / kSwapThreads),
                  static_cast<unsigned>(batch.count));
  ApplyLeafSwapsKernel<<<grid, kSwapThreads, 0, stream>>>(batch, c, w, scratch);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(ApplyLeafSwapsKernel);
  return absl::OkStatus();
}

absl::Status LaunchInvertLeaf(cudaStream_t stream, const ResidueBatch& batch, int w,
                              const LeafScratch& scratch, int slot) {
  InvertLeafKernel<<<batch.count, kInverseThreads, 0, stream>>>(batch, w, scratch, slot);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(InvertLeafKernel);
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
  ReduceProductKernel<<<RowsGrid(rows, cols, batch.count), kElementwiseThreads, 0, stream>>>(
      batch, c_offset, rows, cols, product, use == ProductUse::kAssign);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(ReduceProductKernel);
  return absl::OkStatus();
}

}  // namespace matrixd::cuda
