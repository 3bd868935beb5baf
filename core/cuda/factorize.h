// LU, Cholesky and QR on one CUDA device through cuSOLVER, with the matching solves (see
// Backend::Factorize); batches through the batched routines (core/cuda/factorize_batch.h). Fills
// stats except backend/device/seconds.
#ifndef MATRIXD_CORE_CUDA_FACTORIZE_H_
#define MATRIXD_CORE_CUDA_FACTORIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/cuda/resident_matrix.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// With `keep_on` (the transfer channel of `context`'s device) and options.keep_on_devices, an LU
// or Cholesky of one square matrix without refinement (KeepsOnDevice, kept_factorization.h) leaves
// its factor on the device in FactorizeResult::kept (kept_factorization.h), which reads and solves
// through `keep_on`; `lu` or `l` is then empty, everything else as without it. Any other request
// ignores keep_on_devices.
absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                          const MatrixView* rhs, DeviceContext& context,
                                          JobControl* control, TransferChannel* keep_on = nullptr);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_FACTORIZE_H_
