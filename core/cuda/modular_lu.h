// Blocked LU over Z/p on the GPU: the fast path for det mod p. Trailing updates are GEMM-like tiles
// (exact float64 products with delayed reduction for p < 2^26, 64-bit integer tiles otherwise).
#ifndef MATRIXD_CORE_CUDA_MODULAR_LU_H_
#define MATRIXD_CORE_CUDA_MODULAR_LU_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// REQUIRES: a square INT64; p prime < 2^62. Sets residue and method_used = kLu.
absl::StatusOr<DeterminantResult> ModularLuDeterminant(const MatrixView& a, uint64_t p,
                                                       DeviceContext& context, JobControl* control);

// INVALID_ARGUMENT unless a is a non-empty square INT64 matrix and 2 <= p < 2^62 (primality is
// the caller's to check), naming the offending field; OK otherwise.
absl::Status ValidateModularDeterminantInput(const MatrixView& a, uint64_t p);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_MODULAR_LU_H_
