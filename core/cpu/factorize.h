// LU, Cholesky and QR on the CPU through LAPACKE, with the matching solves.
#ifndef MATRIXD_CORE_CPU_FACTORIZE_H_
#define MATRIXD_CORE_CPU_FACTORIZE_H_

#include "absl/status/statusor.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cpu {

// See Backend::Factorize. Fills result.stats.bytes_moved and .flops, not the timing.
absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, FactorizationKind kind,
                                          const MatrixView* rhs, JobControl* control);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_FACTORIZE_H_
