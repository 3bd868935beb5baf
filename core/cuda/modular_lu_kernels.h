// The kernels of the GPU's blocked LU over Z/p (core/cuda/modular_lu.cc), for primes below 2^32
// on balanced float64 residues (core/cuda/balanced_residue.h), on a batch of matrices at once (one
// prime each; a single prime is a batch of one). Each matrix is n x n row-major with row stride
// n, factored in place: the rows move as P A = L U does (L unit lower triangular), but only the
// inverses of the diagonal blocks are kept (the blocks themselves and the columns of earlier
// panels are left stale, as nothing reads them again). Every kernel reads the matrix's
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
// Widest panel: the deepest diagonal block whose inverse is applied, as the inverses of its
// leaves (core/cuda/modular_lu.cc).
inline constexpr int kMaxSolveDepth = 128;
// Leaf slots per matrix (a leaf's row moves and its inverse) of the batched factorization: one per
// leaf of a panel, for two panels, the one being factored and the one whose trailing update may
// still be queued. (The staged factorization keeps every panel's: LeafScratch::slots.)
inline constexpr int kLeafInverseSlots = 2 * (kMaxSolveDepth / kMaxLeafWidth);
// Words of one leaf inverse D^-1 (w x w): its low pieces (stride w), then its high pieces.
inline constexpr int64_t kLeafInverseWords = int64_t{2} * kMaxLeafWidth * kMaxLeafWidth;
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

// Ints per matrix of a leaf's row moves: their count, then (destination, source) pairs.
inline constexpr int64_t kLeafRowWords = 1 + 4 * int64_t{kMaxLeafWidth};

// Per-matrix scratch of the leaf kernels, `slots` slots each: matrix b's row moves in slot s at
// rows + (b slots + s) kLeafRowWords (written by LaunchFactorLeaf, applied by
// LaunchApplyLeafRows), the pieces of its leaf inverse at inverse_pieces + (b slots + s)
// kLeafInverseWords.
struct LeafScratch {
  int* rows = nullptr;
  double* inverse_pieces = nullptr;
  int slots = kLeafInverseSlots;
};

// Matrix b := the balanced residues mod moduli[b] of the n x n int64 `entries`, for every b.
// `entries` may be batch.a itself (in place) when batch.count == 1.
absl::Status LaunchBalancedResidues(cudaStream_t stream, const ResidueBatch& batch,
                                    const int64_t* entries);

// residues[i] := the balanced residue mod `modulus` of values[i] for i < count (device pointers):
// one piece of a matrix as it lands from the host, int32 or int64.
absl::Status LaunchBalancedResiduesOfValues(cudaStream_t stream, const BalancedModulus& modulus,
                                            const int32_t* values, int64_t count, double* residues);
absl::Status LaunchBalancedResiduesOfValues(cudaStream_t stream, const BalancedModulus& modulus,
                                            const int64_t* values, int64_t count, double* residues);

// Rows [first_row, first_row + rows) of a row-major n x n matrix, landed at `values` (rows x n,
// int32 or int64), written as the balanced residues mod `modulus` of columns [first_row,
// first_row + rows) of its transpose at `residues` (n x n, row stride n): residues[i n + first_row
// + r] := values[r n + i]. One tiled pass through shared memory, both sides coalesced.
// REQUIRES: first_row + rows <= n.
absl::Status LaunchTransposedResiduesOfRows(cudaStream_t stream, const BalancedModulus& modulus,
                                            const int32_t* values, int64_t rows, int64_t n,
                                            int64_t first_row, double* residues);
absl::Status LaunchTransposedResiduesOfRows(cudaStream_t stream, const BalancedModulus& modulus,
                                            const int64_t* values, int64_t rows, int64_t n,
                                            int64_t first_row, double* residues);

// Every state := {1, 0}.
absl::Status LaunchResetStates(cudaStream_t stream, const ResidueBatch& batch);

// Factors and inverts the leaf of every matrix, one launch for all: columns [c, c + w) of rows
// [c, n), given that all columns left of c are done. Each column's pivot is a row whose updated
// entry is non-zero mod p, taken from the diagonal block when it has one, else the first such row
// below it. Writes the inverse mod p of the leaf's permuted diagonal block D = L U
// (core/cuda/block_inverse.h) as pieces D^-1 = kPieceBase high + low into the matrix's inverse
// slot `slot` (the left operand of the products that stand for the triangular solves), the rows
// the pivoting moves into its rows slot `slot`, and multiplies its state's determinant by the
// block's pivots and the moves' sign. Leaves the matrices unchanged. REQUIRES: 1 <= w <=
// kMaxLeafWidth, c + w <= n < 2^31, 0 <= slot < scratch.slots.
absl::Status LaunchFactorLeaf(cudaStream_t stream, const ResidueBatch& batch, int64_t c, int w,
                              const LeafScratch& scratch, int slot);

// Applies each matrix's leaf row moves in slot `slot` (LaunchFactorLeaf of the leaf at column c,
// width w) to its columns [first_col, end_col), except inside the leaf's diagonal block
// a[c..c+w, c..c+w), which is never read again (its inverse is kept) and holds stale values
// afterwards. The caller covers [panel start, n) in one or more calls, in leaf order per column;
// columns left of the panel (never read again) keep their rows. REQUIRES: first_col < end_col <= n.
absl::Status LaunchApplyLeafRows(cudaStream_t stream, const ResidueBatch& batch, int64_t first_col,
                                 int64_t end_col, int64_t c, int w, const LeafScratch& scratch,
                                 int slot);

// For every matrix b: pieces + b pieces_stride (depth x 2 cols, row-major, stride 2 cols) :=
// [lo | hi] of its block B (depth x cols at element b_offset, stride n), B = kPieceBase hi + lo.
absl::Status LaunchSplitPieces(cudaStream_t stream, const ResidueBatch& batch, int64_t b_offset,
                               int depth, int64_t cols, double* pieces, int64_t pieces_stride);

// A two-piece product T = t_lo + kPieceBase t_hi for every matrix b: entry (i, v) of t_lo at
// data + b stride + i ld + v, that of t_hi high_offset further. `data` null: a one-piece product
// already subtracted in place.
struct PieceProduct {
  const double* data = nullptr;
  int64_t stride = 0;
  int64_t ld = 0;
  int64_t high_offset = 0;
};
enum class ProductUse { kSubtract, kAssign };

// For every matrix b, its block C (rows x cols at element c_offset, stride n) := the balanced
// residue of C - T (kSubtract) or of T (kAssign) for the product T of rows x cols described by
// `product`, or of C itself when product.data is null (kSubtract only).
absl::Status LaunchReduceProduct(cudaStream_t stream, const ResidueBatch& batch, int64_t c_offset,
                                 int64_t rows, int64_t cols, const PieceProduct& product,
                                 ProductUse use);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_MODULAR_LU_KERNELS_H_
