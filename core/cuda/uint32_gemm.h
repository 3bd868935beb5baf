// Dense UINT32 products with wrap-around mod 2^32 on the GPU (cuBLAS has no integer GEMM with
// wrap-around).
#ifndef MATRIXD_CORE_CUDA_UINT32_GEMM_H_
#define MATRIXD_CORE_CUDA_UINT32_GEMM_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// REQUIRES: a, b UINT32; validated shapes.
absl::StatusOr<MultiplyResult> Uint32Multiply(const MatrixView& a, const MatrixView& b,
                                              const MultiplyOptions& options,
                                              DeviceContext& context, JobControl* control);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_UINT32_GEMM_H_
