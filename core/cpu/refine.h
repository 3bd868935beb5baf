// Iterative refinement of an LU solve on the CPU (FactorizeOptions::refine; docs/accuracy.md,
// "Iterative refinement"): the mixed-precision path through LAPACKE_dsgesv / zcgesv, and the
// same-precision path, getrf + getrs in the input's precision with residuals in double-double.
#ifndef MATRIXD_CORE_CPU_REFINE_H_
#define MATRIXD_CORE_CPU_REFINE_H_

#include "absl/status/statusor.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cpu {

// Solves A X = B for square A (n x n) and B (n x nrhs) of one floating dtype, refining X as
// `options` says; fills result.refinement and solution, and lu and permutation on the
// same-precision path (the mixed path returns no factors). kTf32 and kFloat16 run as kFloat32.
// The residual sums are split over up to `threads` threads by rows, so the result does not depend
// on their number. FAILED_PRECONDITION for a singular matrix; INVALID_ARGUMENT for shapes or
// dtypes that do not make a square system.
absl::StatusOr<FactorizeResult> RefinedLuSolve(const MatrixView& a, const MatrixView& b,
                                               const RefineOptions& options, int threads);

// ||A X - B||_inf / (||A||_inf ||X||_inf + ||B||_inf) with the residual summed in double-double
// (core/refinement.h's BackwardError). REQUIRES: one floating dtype, A n x n, X and B n x nrhs.
double RefinedBackwardError(const MatrixView& a, const MatrixView& x, const MatrixView& b,
                            int threads = 1);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_REFINE_H_
