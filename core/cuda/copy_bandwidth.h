// The yardstick for memory-bound kernels: the bandwidth of a plain device-to-device copy
// (LaunchCopy, 16-byte loads and stores), timed with events on a context's stream.
#ifndef MATRIXD_CORE_CUDA_COPY_BANDWIDTH_H_
#define MATRIXD_CORE_CUDA_COPY_BANDWIDTH_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"

namespace matrixd::cuda {

// Copies `bytes` (rounded down to 16, at least 16) between two buffers from the context's pool,
// once to warm up and then `repeats` times; returns (bytes read + bytes written) per second of
// the fastest copy. Synchronises the stream; frees the buffers before returning.
// RESOURCE_EXHAUSTED when the buffers do not fit; INVALID_ARGUMENT for repeats < 1.
absl::StatusOr<double> MeasureCopyBandwidth(DeviceContext& context,
                                            size_t bytes = size_t{256} << 20, int repeats = 5);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_COPY_BANDWIDTH_H_
