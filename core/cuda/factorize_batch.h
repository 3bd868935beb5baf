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

// Whether FactorizeBatch refuses NaN and Inf in `a` itself (Backend::FactorizeChecksFinite): a
// batched LU without a right-hand side, whose operand is uploaded in chunks and checked on the
// device as each lands, while earlier chunks are factorized and downloaded.
bool FactorizeBatchChecksFinite(const MatrixView& a, const FactorizeOptions& options,
                                const MatrixView* rhs);

// See Backend::Factorize with options.batch_count > 0. INVALID_ARGUMENT for a matrix shape the
// batched routines do not take (LU and CHOLESKY need square matrices, a QR solve rows >= cols);
// FAILED_PRECONDITION naming the index of the first matrix that is singular (LU solve), not
// positive definite (CHOLESKY) or rank deficient (QR solve); when FactorizeBatchChecksFinite,
// ValidateFactorize's INVALID_ARGUMENT for a NaN or Inf entry (the result destinations may then
// hold partial results). Writes the permutation into the "permutation" destination when there
// is one of its size (FactorizeResult::permutation_in_destination). Fills stats except
// backend/device/seconds.
// REQUIRES: a floating; a.rows a positive multiple of batch_count, every dimension below 2^31;
// rhs, if given, of a's dtype with a.rows rows; a's entries finite unless
// FactorizeBatchChecksFinite.
absl::StatusOr<FactorizeResult> FactorizeBatch(const MatrixView& a, const FactorizeOptions& options,
                                               const MatrixView* rhs, DeviceContext& context);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_FACTORIZE_BATCH_H_
