// Block-sparse products on the GPU (seed paper): a device-side scan marks the non-zero b x b blocks
// of op(A) and op(B) in bitmaps, and only pairs of non-zero blocks are multiplied. All dtypes of
// Multiply, UINT32 wrapping mod 2^32.
#ifndef MATRIXD_CORE_CUDA_BLOCK_SPARSE_H_
#define MATRIXD_CORE_CUDA_BLOCK_SPARSE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// REQUIRES: options.block_size > 0; validated shapes and dtypes.
absl::StatusOr<MultiplyResult> BlockSparseMultiply(const MatrixView& a, const MatrixView& b,
                                                   const MultiplyOptions& options,
                                                   DeviceContext& context, JobControl* control);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_BLOCK_SPARSE_H_
