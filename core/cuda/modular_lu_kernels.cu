#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "absl/status/status.h"
#include "core/cuda/balanced_residue.h"
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

__global__ void __launch_bounds__(kLeafThreads)
    FactorLeafKernel(BalancedModulus f, const double* __restrict__ a, int64_t n, int64_t c, int w,
                     double* __restrict__ lu, double* __restrict__ inverse_diagonal,
                     int* __restrict__ ipiv, ModularLuState* state) {
  if (state->status != 0) return;
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

__global__ void __launch_bounds__(kSwapThreads)
    ApplyLeafSwapsKernel(double* __restrict__ a, int64_t n, int64_t c, int w,
                         const double* __restrict__ lu, const int* __restrict__ ipiv,
                         const ModularLuState* state) {
  if (state->status != 0) return;
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

// ---- Triangular solves on tiles of 32 independent vectors ----

constexpr int kSolveThreads = 256;
constexpr int kSolveGroups = kSolveThreads / 32;
constexpr int kSolveVectors = 32;

// kUpper: the vectors are rows r0 + v of columns [c, c + depth) solved as x U = b (U the upper
// triangle of the diagonal block, 1/u_ss given); otherwise columns j0 + v of rows [c, c + depth)
// solved as L x = b (L unit lower). Either way x_s = d_s (b_s - sum_{t<s} T_st x_t), done
// right-looking: at step t every later entry s takes its term T_st x_t. Thread (v, group) owns
// entries s = group mod kSolveGroups of vector v; each recomputes x_t from the held b_t, so that
// one barrier per step suffices.
template <bool kUpper>
__global__ void __launch_bounds__(kSolveThreads)
    TriangularSolveKernel(BalancedModulus f, double* __restrict__ a, int64_t n, int64_t c,
                          int depth, int64_t first_vector, int64_t vector_end,
                          const double* __restrict__ inverse_diagonal,
                          const ModularLuState* state) {
  if (state->status != 0) return;
  __shared__ double tile[kMaxSolveDepth][kSolveVectors + 1];
  const int tid = static_cast<int>(threadIdx.x);
  const int v = tid % kSolveVectors;
  const int group = tid / kSolveVectors;
  const int64_t v0 = first_vector + static_cast<int64_t>(blockIdx.x) * kSolveVectors;
  // Consecutive threads touch consecutive addresses: along a row in either case.
  auto address = [&](int s, int vec) -> double* {
    return kUpper ? a + (v0 + vec) * n + c + s : a + (c + s) * n + v0 + vec;
  };
  auto map = [&](int idx, int& s, int& vec) {
    if constexpr (kUpper) {
      vec = idx / depth;
      s = idx - vec * depth;
    } else {
      s = idx / kSolveVectors;
      vec = idx - s * kSolveVectors;
    }
  };
  for (int idx = tid; idx < depth * kSolveVectors; idx += kSolveThreads) {
    int s, vec;
    map(idx, s, vec);
    tile[s][vec] = v0 + vec < vector_end ? *address(s, vec) : 0.0;
  }
  __syncthreads();
  for (int t = 0; t + 1 < depth; ++t) {
    const double x = kUpper ? f.Mul(tile[t][v], inverse_diagonal[t]) : tile[t][v];
    const int first = t + 1 + ((group - (t + 1)) % kSolveGroups + kSolveGroups) % kSolveGroups;
    for (int s = first; s < depth; s += kSolveGroups) {
      const double coefficient = kUpper ? __ldg(a + (c + t) * n + c + s)   // U[t][s]
                                        : __ldg(a + (c + s) * n + c + t);  // L[s][t]
      tile[s][v] = f.MulSub(tile[s][v], coefficient, x);
    }
    __syncthreads();
  }
  for (int idx = tid; idx < depth * kSolveVectors; idx += kSolveThreads) {
    int s, vec;
    map(idx, s, vec);
    if (v0 + vec >= vector_end) continue;
    const double x = tile[s][vec];
    *address(s, vec) = kUpper ? f.Mul(x, inverse_diagonal[s]) : x;
  }
}

// ---- Elementwise ----

__global__ void __launch_bounds__(kElementwiseThreads)
    BalancedResiduesKernel(BalancedModulus f, int64_t* entries, int64_t count) {
  static_assert(sizeof(double) == sizeof(int64_t));
  double* residues = reinterpret_cast<double*>(entries);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kElementwiseThreads + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * kElementwiseThreads) {
    residues[i] = f.FromSigned(entries[i]);
  }
}

__global__ void ResetStateKernel(ModularLuState* state) {
  state->determinant = 1.0;
  state->status = 0;
}

// Rows x cols kernels: rows along the grid's y (no division per entry), columns along x.
dim3 RowsGrid(int64_t rows, int64_t cols) {
  return dim3(static_cast<unsigned>(
                  std::min<int64_t>((cols + kElementwiseThreads - 1) / kElementwiseThreads, 1024)),
              static_cast<unsigned>(std::clamp<int64_t>(rows, 1, 65535)));
}

__global__ void __launch_bounds__(kElementwiseThreads)
    SplitPiecesKernel(const double* __restrict__ b, int64_t ldb, int depth, int64_t cols,
                      double* __restrict__ pieces, const ModularLuState* state) {
  if (state->status != 0) return;
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
    ReduceProductKernel(BalancedModulus f, double* __restrict__ c, int64_t ldc, int64_t rows,
                        int64_t cols, const double* __restrict__ product,
                        const ModularLuState* state) {
  if (state->status != 0) return;
  for (int64_t i = blockIdx.y; i < rows; i += gridDim.y) {
    for (int64_t v = static_cast<int64_t>(blockIdx.x) * kElementwiseThreads + threadIdx.x; v < cols;
         v += static_cast<int64_t>(gridDim.x) * kElementwiseThreads) {
      double& x = c[i * ldc + v];
      if (product == nullptr) {
        x = f.Reduce(x);
      } else {
        // Each piece's sum is below 2^53; reduced, the three terms stay below 2^48.
        const double low = f.Reduce(product[i * 2 * cols + v]);
        const double high = f.Reduce(product[i * 2 * cols + cols + v]);
        x = f.Reduce(x - low - kPieceBase * high);
      }
    }
  }
}

}  // namespace

absl::Status LaunchBalancedResidues(cudaStream_t stream, const BalancedModulus& modulus,
                                    int64_t* entries, int64_t count) {
  BalancedResiduesKernel<<<ElementwiseBlocks(count), kElementwiseThreads, 0, stream>>>(
      modulus, entries, count);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(BalancedResiduesKernel);
  return absl::OkStatus();
}

absl::Status LaunchResetState(cudaStream_t stream, ModularLuState* state) {
  ResetStateKernel<<<1, 1, 0, stream>>>(state);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(ResetStateKernel);
  return absl::OkStatus();
}

absl::Status LaunchFactorLeaf(cudaStream_t stream, const BalancedModulus& modulus, const double* a,
                              int64_t n, int64_t c, int w, double* lu, double* inverse_diagonal,
                              int* ipiv, ModularLuState* state) {
  FactorLeafKernel<<<1, kLeafThreads, 0, stream>>>(modulus, a, n, c, w, lu, inverse_diagonal, ipiv,
                                                   state);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(FactorLeafKernel);
  return absl::OkStatus();
}

absl::Status LaunchApplyLeafSwaps(cudaStream_t stream, double* a, int64_t n, int64_t c, int w,
                                  const double* lu, const int* ipiv, const ModularLuState* state) {
  const int blocks = static_cast<int>((n + kSwapThreads - 1) / kSwapThreads);
  ApplyLeafSwapsKernel<<<blocks, kSwapThreads, 0, stream>>>(a, n, c, w, lu, ipiv, state);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(ApplyLeafSwapsKernel);
  return absl::OkStatus();
}

absl::Status LaunchSolveUpperRight(cudaStream_t stream, const BalancedModulus& modulus, double* a,
                                   int64_t n, int64_t c, int w, const double* inverse_diagonal,
                                   const ModularLuState* state) {
  const int64_t rows = n - c - w;
  if (rows <= 0) return absl::OkStatus();
  const int blocks = static_cast<int>((rows + kSolveVectors - 1) / kSolveVectors);
  TriangularSolveKernel<true><<<blocks, kSolveThreads, 0, stream>>>(modulus, a, n, c, w, c + w, n,
                                                                    inverse_diagonal, state);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(TriangularSolveKernel<true>);
  return absl::OkStatus();
}

absl::Status LaunchSolveLowerUnitLeft(cudaStream_t stream, const BalancedModulus& modulus,
                                      double* a, int64_t n, int64_t c, int h, int64_t j,
                                      int64_t cols, const ModularLuState* state) {
  if (cols <= 0 || h <= 1) return absl::OkStatus();  // L of order 1 is the identity
  const int blocks = static_cast<int>((cols + kSolveVectors - 1) / kSolveVectors);
  TriangularSolveKernel<false>
      <<<blocks, kSolveThreads, 0, stream>>>(modulus, a, n, c, h, j, j + cols, nullptr, state);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(TriangularSolveKernel<false>);
  return absl::OkStatus();
}

absl::Status LaunchSplitPieces(cudaStream_t stream, const double* b, int64_t ldb, int depth,
                               int64_t cols, double* pieces, const ModularLuState* state) {
  SplitPiecesKernel<<<RowsGrid(depth, cols), kElementwiseThreads, 0, stream>>>(b, ldb, depth, cols,
                                                                               pieces, state);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(SplitPiecesKernel);
  return absl::OkStatus();
}

absl::Status LaunchReduceProduct(cudaStream_t stream, const BalancedModulus& modulus, double* c,
                                 int64_t ldc, int64_t rows, int64_t cols, const double* product,
                                 const ModularLuState* state) {
  ReduceProductKernel<<<RowsGrid(rows, cols), kElementwiseThreads, 0, stream>>>(
      modulus, c, ldc, rows, cols, product, state);
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(ReduceProductKernel);
  return absl::OkStatus();
}

}  // namespace matrixd::cuda
