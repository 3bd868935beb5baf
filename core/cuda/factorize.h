// LU, Cholesky and QR on one CUDA device through cuSOLVER, with the matching solves (see
// Backend::Factorize); batches through the batched routines (core/cuda/factorize_batch.h). Fills
// stats except backend/device/seconds.
#ifndef MATRIXD_CORE_CUDA_FACTORIZE_H_
#define MATRIXD_CORE_CUDA_FACTORIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                          const MatrixView* rhs, DeviceContext& context,
                                          JobControl* control);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_FACTORIZE_H_
