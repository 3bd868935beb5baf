// The one-piece update of the GPU's modular LU (core/cuda/modular_lu.cc) in one pass: for every
// matrix of a ResidueBatch, C := the balanced residue of C - A B, A, B and C blocks of balanced
// residues. The product runs on the FP64 tensor cores (mma.sync m16n8k8) and the reduction in the
// same kernel, so C is read and written once, where a DGEMM in place followed by the reduction
// reads and writes it twice. Every partial sum is an integer below 2^53 under the one-piece
// condition (ProductPieces(p, depth) == 1), so the result has the same bits as the DGEMM and
// reduction it replaces, whatever the order of the sums.
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

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_FUSED_MODULAR_PRODUCT_H_
