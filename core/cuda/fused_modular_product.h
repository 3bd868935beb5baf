// The one-piece products of the GPU's modular LU (core/cuda/modular_lu.cc) in one pass: for every
// matrix of a ResidueBatch, C := the balanced residue of C - A B, A, B and C blocks of balanced
// residues (and, for a leaf's inverse, B := D^-1 B). The product runs on the FP64 tensor cores
// (mma.sync m16n8k8) and the reduction in the same kernel, so C is read and written once, where a
// DGEMM in place followed by the reduction reads and writes it twice. Every partial sum is an
// integer below 2^53 under the one-piece condition (ProductPieces(p, depth) == 1), so the result
// has the same bits as the DGEMM and reduction it replaces, whatever the order of the sums.
#ifndef MATRIXD_CORE_CUDA_FUSED_MODULAR_PRODUCT_H_
#define MATRIXD_CORE_CUDA_FUSED_MODULAR_PRODUCT_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/cuda/modular_lu_kernels.h"

namespace matrixd::cuda {

// Where the blocks lie in each matrix of the batch (element offsets from its first entry; rows
// of stride batch.n): A is rows x depth, B depth x cols, C rows x cols.
struct FusedProductBlocks {
  int64_t a_offset = 0;
  int64_t b_offset = 0;
  int64_t c_offset = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t depth = 0;
};

// For every matrix b of `batch` whose state is not singular: C := Reduce(C - A B) mod
// moduli[b], one launch. Empty blocks are a no-op. REQUIRES: ProductPieces(p, depth) == 1 for
// every modulus of the batch (then |C| + depth (p / 2)^2 <= 2^53); C overlaps neither A nor B.
// INVALID_ARGUMENT for a negative extent.
absl::Status LaunchFusedSubtractProduct(cudaStream_t stream, const ResidueBatch& batch,
                                        const FusedProductBlocks& blocks);

// The leaf inverses D^-1 (w x w) of every matrix, as LaunchFactorLeaf leaves them: matrix b's
// low pieces at first + b * matrix_stride (row-major, stride w), its high pieces w^2 further,
// D^-1 = kPieceBase high + low.
struct LeafInverses {
  const double* first = nullptr;
  int64_t matrix_stride = 0;
};

// For every matrix b of `batch` whose state is not singular: its block B (w x cols at b_offset,
// rows of stride batch.n) := Reduce(D^-1 B) in place, D^-1 as `inverses` gives it, one launch:
// the leaf's triangular solves of the modular LU as one product (core/cuda/modular_lu.cc's
// ApplyLeafInverse) without the two pieces' separate sums. Empty blocks are a no-op.
// REQUIRES: ProductPieces(p, w) == 1 for every modulus (then w (p / 2)^2 < 2^53: every sum of the
// whole inverse's products is exact), the inverses' entries balanced residues.
// INVALID_ARGUMENT for w outside [0, kMaxLeafWidth] or negative cols.
absl::Status LaunchFusedApplyInverse(cudaStream_t stream, const ResidueBatch& batch,
                                     const LeafInverses& inverses, int w, int64_t b_offset,
                                     int64_t cols);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_FUSED_MODULAR_PRODUCT_H_
