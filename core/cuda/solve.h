// Solves with a kept factorization on one CUDA device (see Backend::Solve): cuBLAS triangular
// solves (and a gemm for QR's Q^H B) straight on the kept row-major factors, which read
// column-major are their transposes, so nothing is transposed and no factor leaves the device.
// Fills stats except backend/device/seconds.
#ifndef MATRIXD_CORE_CUDA_SOLVE_H_
#define MATRIXD_CORE_CUDA_SOLVE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// Device views on `context`'s device are read in place, as are the parts of a factorization kept
// whole on it (FactorizationView::kept, WithKeptParts); host views (and device views of another
// device) are copied in first. INVALID_ARGUMENT for one kept in parts over several GPUs. X goes
// straight into options.output when that is a resident matrix of X's shape on this device
// (SolveResult::x is then empty).
absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                  const SolveOptions& options, DeviceContext& context,
                                  JobControl* control);

// Upper estimate of what Solve allocates (see core/cuda/memory_estimate.h): copies of the host
// operands, X and the work space of a transposed LU solve and of the residual.
uint64_t SolveDeviceBytes(const FactorizationView& factorization, const MatrixView& rhs,
                          const SolveOptions& options);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_SOLVE_H_
