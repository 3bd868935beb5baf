// Salem-Said condensation determinants on the GPU (seed paper), over the reals/complex numbers
// (pivot closest to 1, column divided by it) and over Z/p. One upload, a device-resident loop of
// condensation steps, a few numbers back.
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
// Computes in float64 / complex128 (float32 and complex64 widened, as the CPU backend does), each
// row first scaled by a power of two; condensation steps fused several per pass over the matrix.
// Sets value, method_used = kCondensation, stats.flops and stats.bytes_moved. OUT_OF_RANGE when
// element growth overflows the double range; CANCELLED when `control` is cancelled.
absl::StatusOr<DeterminantResult> CondensationDeterminant(const MatrixView& a,
                                                          DeviceContext& context,
                                                          JobControl* control);

// REQUIRES: a square INT64; p prime < 2^62. Sets residue and method_used = kCondensation.
absl::StatusOr<DeterminantResult> ModularCondensationDeterminant(const MatrixView& a, uint64_t p,
                                                                 DeviceContext& context,
                                                                 JobControl* control);

// The same two with the seed paper's schedule, one kernel launch per condensation step: kept to
// compare against (the matrix is read and written once per step instead of once per pass).
absl::StatusOr<DeterminantResult> CondensationDeterminantUnfused(const MatrixView& a,
                                                                 DeviceContext& context,
                                                                 JobControl* control);
absl::StatusOr<DeterminantResult> ModularCondensationDeterminantUnfused(const MatrixView& a,
                                                                        uint64_t p,
                                                                        DeviceContext& context,
                                                                        JobControl* control);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_CONDENSATION_H_
