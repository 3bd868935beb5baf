// A factorization kept on the one CUDA device that computed it (core/device_factorization.h;
// Factorize with FactorizeOptions::keep_on_devices, core/cuda/factorize.h): the row-major factor
// exactly as Factorize would have downloaded it (LU's packed factors, Cholesky's L with zeros above
// the diagonal) and LU's permutation (INT64, 0-based) beside it, in device memory from the device's
// pool, whole on one device (whole_on_one_device()): any Solve on that device reads them in place
// (core/cuda/solve.h, through WithKeptParts). Read, its own Solve and its destruction run on
// `channel` (the device's transfer context, core/cuda/resident_matrix.h), which must outlive it.
#ifndef MATRIXD_CORE_CUDA_KEPT_FACTORIZATION_H_
#define MATRIXD_CORE_CUDA_KEPT_FACTORIZATION_H_

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/device_context.h"
#include "core/cuda/resident_matrix.h"
#include "core/device_factorization.h"
#include "core/operations.h"

namespace matrixd::cuda {

// Whether Factorize keeps the factorization of `a` on the device when asked to
// (options.keep_on_devices): LU or Cholesky of one square matrix without refinement. Any other
// comes back to host memory as without it.
bool KeepsOnDevice(const MatrixView& a, const FactorizeOptions& options);

// Keeps `factor` (n x n of `dtype`, row-major, written by work queued on `context`'s stream) and,
// for LU, `permutation` (n int64, host memory: copied to the device here) as a factorization on
// `channel`'s device, which must be `context`'s. Waits for `context`'s stream, so that any stream
// may read the parts afterwards. INTERNAL for CUDA errors, RESOURCE_EXHAUSTED when the
// permutation does not fit.
absl::StatusOr<std::unique_ptr<DeviceFactorization>> KeepFactorization(
    FactorizationKind kind, int64_t n, DType dtype, DeviceBuffer factor,
    std::span<const int64_t> permutation, DeviceContext& context, TransferChannel& channel);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_KEPT_FACTORIZATION_H_
