// The kernels of the GPU's blocked LU over Z/p (core/cuda/modular_lu.cc), for primes below 2^32
// on balanced float64 residues (core/cuda/balanced_residue.h), on a batch of matrices at once (one
// prime each; a single prime is a batch of one). Each matrix is n x n row-major with row stride
// n, factored in place into P A = L U, L unit lower triangular. Every kernel reads the matrix's
// device-side ModularLuState first and returns at once once a column without a non-zero pivot has
// set its status, so the host queues the whole factorization without waiting. Plain C++ (no
// kernels, no core/matrix.h), so that host code calls the launchers like a library.
#ifndef MATRIXD_CORE_CUDA_MODULAR_LU_KERNELS_H_
#define MATRIXD_CORE_CUDA_MODULAR_LU_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/cuda/balanced_residue.h"

namespace matrixd::cuda {

// Widest diagonal block one thread block factors (columns of a leaf).
inline constexpr int kMaxLeafWidth = 64;
// Deepest triangular system the solve kernels take (the panel width).
inline constexpr int kMaxSolveDepth = 128;
// Most matrices one launch takes (the grid's y and z extents).
inline constexpr int kMaxResidueBatch = 65535;

// Device-resident result of the factorization so far.
struct ModularLuState {
  double determinant;  // balanced residue: the product of the pivots with the swaps' sign
  int status;          // 1 once a column had no non-zero pivot: det = 0, the rest is skipped
};

// `count` n x n matrices factored side by side, one prime each (device pointers): matrix b at
// a + b n^2, reduced mod moduli[b], its state at states[b]. Each kernel takes the matrix from its
// grid, so one launch serves the whole batch; a matrix whose state says singular is skipped by
// every kernel while the others go on. A single prime is a batch of one.
struct ResidueBatch {
  double* a = nullptr;
  int64_t n = 0;
  int count = 0;  // 1 <= count <= kMaxResidueBatch
  const BalancedModulus* moduli = nullptr;
  ModularLuState* states = nullptr;
};

// Per-matrix scratch of the leaf kernels, `count` slices each: matrix b's w x w factors at
// lu + b kMaxLeafWidth^2, its 1/u_jj at inverse_diagonal + b kMaxLeafWidth, its swaps at
// ipiv + b kMaxLeafWidth.
struct LeafScratch {
  double* lu = nullptr;
  double* inverse_diagonal = nullptr;
  int* ipiv = nullptr;
};

// Matrix b := the balanced residues mod moduli[b] of the n x n int64 `entries`, for every b.
// `entries` may be batch.a itself (in place) when batch.count == 1.
absl::Status LaunchBalancedResidues(cudaStream_t stream, const ResidueBatch& batch,
                                    const int64_t* entries);

// Every state := {1, 0}.
absl::Status LaunchResetStates(cudaStream_t stream, const ResidueBatch& batch);

// Factors the leaf of every matrix: columns [c, c + w) of rows [c, n), given that all columns left
// of c are done. Picks for column c + j the first row at or below c + j (the diagonal block
// first) whose updated entry is non-zero mod p. Writes the w x w factors of the permuted diagonal
// block to the matrix's `lu` slice (row-major, stride w: L strictly below the diagonal, U on and
// above), 1/u_jj to its `inverse_diagonal`, the row swapped with row c + j to its ipiv[j]
// (LAPACK's convention), and multiplies its state's determinant by the block's pivots and swap
// signs. Leaves the matrices unchanged. REQUIRES: 1 <= w <= kMaxLeafWidth, c + w <= n.
absl::Status LaunchFactorLeaf(cudaStream_t stream, const ResidueBatch& batch, int64_t c, int w,
                              const LeafScratch& scratch);

// Applies each matrix's leaf swaps (ipiv[0..w), rows c + j <-> ipiv[j] in order) to all its
// columns, then stores its `lu` into the diagonal block a[c..c+w, c..c+w).
absl::Status LaunchApplyLeafSwaps(cudaStream_t stream, const ResidueBatch& batch, int64_t c, int w,
                                  const LeafScratch& scratch);

// In every matrix, rows [c + w, n) of columns [c, c + w) := themselves times U^-1, U the upper
// triangle of the diagonal block a[c..c+w, c..c+w) with 1/u_jj in the scratch's inverse_diagonal:
// the leaf's L21. REQUIRES: 1 <= w <= kMaxSolveDepth.
absl::Status LaunchSolveUpperRight(cudaStream_t stream, const ResidueBatch& batch, int64_t c, int w,
                                   const LeafScratch& scratch);

// In every matrix, rows [c, c + h) of columns [j, j + cols) := L^-1 times themselves, L the unit
// lower triangle of a[c..c+h, c..c+h): U12. REQUIRES: 1 <= h <= kMaxSolveDepth.
absl::Status LaunchSolveLowerUnitLeft(cudaStream_t stream, const ResidueBatch& batch, int64_t c,
                                      int h, int64_t j, int64_t cols);

// For every matrix b: pieces + b pieces_stride (depth x 2 cols, row-major, stride 2 cols) :=
// [lo | hi] of its block B (depth x cols at element b_offset, stride n), B = kPieceBase hi + lo.
absl::Status LaunchSplitPieces(cudaStream_t stream, const ResidueBatch& batch, int64_t b_offset,
                               int depth, int64_t cols, double* pieces, int64_t pieces_stride);

// For every matrix b, its block C (rows x cols at element c_offset, stride n) := the balanced
// residue of C - (t_lo + kPieceBase t_hi) when `product` is given, with [t_lo | t_hi] the
// rows x 2 cols (stride 2 cols) at product + b product_stride of a two-piece product, or of C
// itself when `product` is null (a one-piece product already subtracted in place).
absl::Status LaunchReduceProduct(cudaStream_t stream, const ResidueBatch& batch, int64_t c_offset,
                                 int64_t rows, int64_t cols, const double* product,
                                 int64_t product_stride);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_MODULAR_LU_KERNELS_H_
