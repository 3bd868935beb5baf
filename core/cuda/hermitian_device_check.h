// RequireHermitian (core/hermitian_check.h) for a square matrix that is already in device memory
// (a resident operand of a Cholesky or of a batch of them): the same tolerance and the same
// INVALID_ARGUMENT, found on
// the device (two passes over A, one of them by tiles and their mirrors) instead of reading A back
// to the host.
#ifndef MATRIXD_CORE_CUDA_HERMITIAN_DEVICE_CHECK_H_
#define MATRIXD_CORE_CUDA_HERMITIAN_DEVICE_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/cuda/device_context.h"

namespace matrixd::cuda {

// `a`: n x n row-major entries of floating type T in device memory on context's device, or
// `batch_count` such matrices one after the other (0: one matrix), each checked against its own
// largest entry. OK, or the status RequireHermitian gives for the first offending pair of the
// first offending matrix, naming `field` (and the matrix of a batch). Synchronises context's
// stream. INTERNAL for CUDA errors.
template <typename T>
absl::Status RequireHermitianOnDevice(const T* a, int64_t n, int64_t batch_count,
                                      absl::string_view field, DeviceContext& context);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_HERMITIAN_DEVICE_CHECK_H_
