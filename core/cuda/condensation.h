// Salem-Said condensation determinants on the GPU (seed paper), over the reals/complex numbers (pivot closest to 1, column divided by it) and over Z/p. One upload, a device-resident loop of condensation steps, a few numbers back.
#ifndef MATRIXD_CORE_CUDA_CONDENSATION_H_
#define MATRIXD_CORE_CUDA_CONDENSATION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// REQUIRES: a square, FLOAT32/FLOAT64/COMPLEX64/COMPLEX128 (or INT64, computed as float64).
absl::StatusOr<DeterminantResult> CondensationDeterminant(const MatrixView& a, DeviceContext& context,
                                                          JobControl* control);

// REQUIRES: a square INT64; p prime < 2^62. Sets residue and method_used = kCondensation.
absl::StatusOr<DeterminantResult> ModularCondensationDeterminant(const MatrixView& a, uint64_t p,
                                                                 DeviceContext& context,
                                                                 JobControl* control);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_CONDENSATION_H_
