// Iterative refinement of an LU solve on one CUDA device (FactorizeOptions::refine; the CPU twin
// is core/cpu/refine.h): the mixed-precision path through cuSOLVER's IRS solver
// (cusolverDnIRSXgesv, float32 / TF32 / float16 factors), and the same-precision path, getrf +
// getrs in the input's precision with residuals summed in double-double by our kernel
// (core/cuda/refine_kernels.h). Fills stats except backend/device/seconds.
#ifndef MATRIXD_CORE_CUDA_REFINE_H_
#define MATRIXD_CORE_CUDA_REFINE_H_

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// Solves A X = B (A n x n, B n x nrhs, one floating dtype, host views) refining X as `options`
// says; fills result.refinement and solution, and lu and permutation on the same-precision path
// (the mixed path returns no factors). FAILED_PRECONDITION for a singular matrix.
absl::StatusOr<FactorizeResult> RefinedLuSolve(const MatrixView& a, const MatrixView& b,
                                               const RefineOptions& options,
                                               DeviceContext& context);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_REFINE_H_
