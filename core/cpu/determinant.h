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
// Real and complex input (and INT64 with modulus 0) is computed in double / complex<double>; AUTO
// is LU. INT64 with modulus 0 also gets `exact`, the exact integer determinant, when
// primes * n^3 <= 1e10 (primes for Hadamard's bound, see core/cpu/exact_determinant.h), and then
// `value` is that integer rounded; above that budget `exact` stays empty. With modulus p > 0 only
// `residue` is set.
// Modular and exact determinants run on up to `threads` (>= 1) threads.
absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                              const DeterminantOptions& options, int threads,
                                              JobControl* control);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_DETERMINANT_H_
