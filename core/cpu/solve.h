// Solves with a kept factorization on the CPU (see Backend::Solve): CBLAS triangular solves on the
// row-major factors as they are kept, with no transposed copies of them (LAPACKE's row-major
// getrs/potrs would transpose the factors on every call).
#ifndef MATRIXD_CORE_CPU_SOLVE_H_
#define MATRIXD_CORE_CPU_SOLVE_H_

#include "absl/status/statusor.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cpu {

// See Backend::Solve. REQUIRES: host views (INVALID_ARGUMENT for a device view). Ignores
// options.output (X is returned). Fills result.stats.bytes_moved and .flops, not the timing.
absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                  const SolveOptions& options, JobControl* control);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_SOLVE_H_
