// Determinants on one CUDA device; dispatches by method and modulus (see Backend::Determinant).
// Fills stats except backend/device/seconds.
#ifndef MATRIXD_CORE_CUDA_DETERMINANT_H_
#define MATRIXD_CORE_CUDA_DETERMINANT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                              const DeterminantOptions& options,
                                              DeviceContext& context, JobControl* control);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DETERMINANT_H_
