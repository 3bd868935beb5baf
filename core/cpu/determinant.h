// Determinants on the CPU: LU (LAPACKE getrf), Salem-Said condensation (real, complex and mod p),
// modular Gaussian elimination, and the exact integer determinant of INT64 matrices.
#ifndef MATRIXD_CORE_CPU_DETERMINANT_H_
#define MATRIXD_CORE_CPU_DETERMINANT_H_

#include "absl/status/statusor.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cpu {

// See Backend::Determinant. Fills result.stats.bytes_moved and .flops, not the timing.
absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                              const DeterminantOptions& options,
                                              JobControl* control);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_DETERMINANT_H_
