// The batched path of Factorize on one CUDA device: a batch of small matrices of one shape is
// uploaded once and factorized by cuBLAS/cuSOLVER's batched routines (getrfBatched/getrsBatched,
// potrfBatched with trsmBatched, geqrfBatched with our own kernel for Q), one call for the whole
// batch instead of one per matrix.
#ifndef MATRIXD_CORE_CUDA_FACTORIZE_BATCH_H_
#define MATRIXD_CORE_CUDA_FACTORIZE_BATCH_H_

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// See Backend::Factorize with options.batch_count > 0. INVALID_ARGUMENT for a matrix shape the
// batched routines do not take (LU and CHOLESKY need square matrices, a QR solve rows >= cols);
// FAILED_PRECONDITION naming the index of the first matrix that is singular (LU solve), not
// positive definite (CHOLESKY) or rank deficient (QR solve). Fills stats except
// backend/device/seconds.
// REQUIRES: a floating; a.rows a positive multiple of batch_count, every dimension below 2^31;
// rhs, if given, of a's dtype with a.rows rows.
absl::StatusOr<FactorizeResult> FactorizeBatch(const MatrixView& a, const FactorizeOptions& options,
                                               const MatrixView* rhs, DeviceContext& context);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_FACTORIZE_BATCH_H_
