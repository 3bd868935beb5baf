// LU, Cholesky and QR on the CPU through LAPACKE, with the matching solves, of one matrix or of
// each matrix of a batch.
#ifndef MATRIXD_CORE_CPU_FACTORIZE_H_
#define MATRIXD_CORE_CPU_FACTORIZE_H_

#include "absl/status/statusor.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cpu {

// See Backend::Factorize. A batch of small matrices is spread over up to `threads` threads (one
// LAPACK call per matrix); one matrix, or a batch of large ones, runs on the calling thread and
// leaves the parallelism to OpenBLAS. With options.refine, core/cpu/refine.h's RefinedLuSolve.
// Fills result.stats.bytes_moved and .flops, not the timing.
absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                          const MatrixView* rhs, int threads, JobControl* control);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_FACTORIZE_H_
