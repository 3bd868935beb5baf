// Products on one CUDA device: cuBLAS for float/complex, own kernels for UINT32 and block-sparse
// (see Backend::Multiply). Fills stats except backend/device/seconds.
#ifndef MATRIXD_CORE_CUDA_MULTIPLY_H_
#define MATRIXD_CORE_CUDA_MULTIPLY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                        const MultiplyOptions& options, DeviceContext& context,
                                        JobControl* control);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_MULTIPLY_H_
