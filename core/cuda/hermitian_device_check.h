// RequireHermitian (core/hermitian_check.h) for a square matrix that is already in device memory
// (a resident operand of a Cholesky): the same tolerance and the same INVALID_ARGUMENT, found on
// the device (two passes over A, one of them by tiles and their mirrors) instead of reading A back
// to the host.
#ifndef MATRIXD_CORE_CUDA_HERMITIAN_DEVICE_CHECK_H_
#define MATRIXD_CORE_CUDA_HERMITIAN_DEVICE_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/cuda/device_context.h"

namespace matrixd::cuda {

// `a`: n x n row-major entries of floating type T in device memory on context's device. OK, or
// the status RequireHermitian gives for the first offending pair, naming `field`. Synchronises
// context's stream. INTERNAL for CUDA errors.
template <typename T>
absl::Status RequireHermitianOnDevice(const T* a, int64_t n, absl::string_view field,
                                      DeviceContext& context);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_HERMITIAN_DEVICE_CHECK_H_
