// The kernels of the GPU's blocked LU over Z/p (core/cuda/modular_lu.cc), for primes below 2^32
// on balanced float64 residues (core/cuda/balanced_residue.h). The matrix is n x n row-major with
// row stride n, factored in place into P A = L U, L unit lower triangular. Every kernel reads the
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

// Device-resident result of the factorization so far.
struct ModularLuState {
  double determinant;  // balanced residue: the product of the pivots with the swaps' sign
  int status;          // 1 once a column had no non-zero pivot: det = 0, the rest is skipped
};

// entries[i] (int64) := its balanced residue as float64, in place, i < count.
absl::Status LaunchBalancedResidues(cudaStream_t stream, const BalancedModulus& modulus,
                                    int64_t* entries, int64_t count);

// state := {1, 0}.
absl::Status LaunchResetState(cudaStream_t stream, ModularLuState* state);

// Factors the leaf: columns [c, c + w) of rows [c, n), given that all columns left of c are done.
// Picks for column c + j the first row at or below c + j (the diagonal block first) whose
// updated entry is non-zero mod p. Writes the w x w factors of the permuted diagonal block to
// `lu` (row-major, stride w: L strictly below the diagonal, U on and above), 1/u_jj to
// `inverse_diagonal`, the row swapped with row c + j to ipiv[j] (LAPACK's convention), and
// multiplies state->determinant by the block's pivots and swap signs. Leaves `a` unchanged.
// REQUIRES: 1 <= w <= kMaxLeafWidth, c + w <= n.
absl::Status LaunchFactorLeaf(cudaStream_t stream, const BalancedModulus& modulus, const double* a,
                              int64_t n, int64_t c, int w, double* lu, double* inverse_diagonal,
                              int* ipiv, ModularLuState* state);

// Applies the leaf's swaps (ipiv[0..w), rows c + j <-> ipiv[j] in order) to every column of `a`,
// then stores `lu` into the diagonal block a[c..c+w, c..c+w).
absl::Status LaunchApplyLeafSwaps(cudaStream_t stream, double* a, int64_t n, int64_t c, int w,
                                  const double* lu, const int* ipiv, const ModularLuState* state);

// Rows [c + w, n) of columns [c, c + w) := themselves times U^-1, U the upper triangle of the
// diagonal block a[c..c+w, c..c+w) with 1/u_jj in inverse_diagonal: the leaf's L21.
// REQUIRES: 1 <= w <= kMaxSolveDepth.
absl::Status LaunchSolveUpperRight(cudaStream_t stream, const BalancedModulus& modulus, double* a,
                                   int64_t n, int64_t c, int w, const double* inverse_diagonal,
                                   const ModularLuState* state);

// Rows [c, c + h) of columns [j, j + cols) := L^-1 times themselves, L the unit lower triangle of
// a[c..c+h, c..c+h): U12. REQUIRES: 1 <= h <= kMaxSolveDepth.
absl::Status LaunchSolveLowerUnitLeft(cudaStream_t stream, const BalancedModulus& modulus,
                                      double* a, int64_t n, int64_t c, int h, int64_t j,
                                      int64_t cols, const ModularLuState* state);

// pieces (depth x 2 cols, row-major, stride 2 cols) := [lo | hi] of b (depth x cols, stride ldb),
// b = kPieceBase hi + lo entrywise.
absl::Status LaunchSplitPieces(cudaStream_t stream, const double* b, int64_t ldb, int depth,
                               int64_t cols, double* pieces, const ModularLuState* state);

// c (rows x cols, stride ldc) := balanced residue of c - (t_lo + kPieceBase t_hi) when `product`
// is the rows x 2 cols [t_lo | t_hi] (stride 2 cols) of a two-piece product, or of c itself when
// `product` is null (a one-piece product already subtracted in place).
absl::Status LaunchReduceProduct(cudaStream_t stream, const BalancedModulus& modulus, double* c,
                                 int64_t ldc, int64_t rows, int64_t cols, const double* product,
                                 const ModularLuState* state);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_MODULAR_LU_KERNELS_H_
