// Device-side timing for matrixd_bench: a call queued on a context's stream, timed between two
// events, and the yardsticks the tables put next to our operations, each on data already on the
// device: the copy kernel, cuBLAS gemm and cuSOLVER getrf alone, and an upload.
#ifndef MATRIXD_TESTS_BENCH_CUDA_DEVICE_TIMING_H_
#define MATRIXD_TESTS_BENCH_CUDA_DEVICE_TIMING_H_

#include <cstddef>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/matrix.h"

namespace matrixd::bench {

// Median device seconds of `call` (queued on the context's stream) between two events, over
// `repeats` runs after one warm-up run; `prepare` is queued before each run's start event and is
// not timed.
absl::StatusOr<double> TimeOnDevice(cuda::DeviceContext& context, int repeats,
                                    const std::function<absl::Status()>& prepare,
                                    const std::function<absl::Status()>& call);
absl::Status NoPreparation();

// A new device buffer holding a's bytes.
absl::StatusOr<cuda::DeviceBuffer> UploadMatrix(cuda::DeviceContext& context, const Matrix& a);

// Median seconds of the copy kernel (cuda::LaunchCopy) copying `bytes` (rounded down to a
// multiple of 16) between two buffers of its own: it moves 2 * bytes.
absl::StatusOr<double> TimeCopyKernel(cuda::DeviceContext& context, size_t bytes, int repeats);

// Median seconds of one cuBLAS gemm C = A B of the n x n matrices a and b already on the device:
// dgemm for float64, sgemm for float32 (on TF32 tensor cores when tf32).
// REQUIRES: a and b square, of one order and one dtype, float32 or float64.
absl::StatusOr<double> TimeCublasGemm(cuda::DeviceContext& context, const Matrix& a,
                                      const Matrix& b, bool tf32, int repeats);

// Median seconds of cuSOLVER dgetrf of the n x n float64 matrix a on the device, on a copy
// restored (untimed) before each run. REQUIRES: a square float64.
absl::StatusOr<double> TimeDgetrf(cuda::DeviceContext& context, const Matrix& a, int repeats);

// Median seconds of the upload of a from (pageable) host memory.
absl::StatusOr<double> TimeUpload(cuda::DeviceContext& context, const Matrix& a, int repeats);

}  // namespace matrixd::bench

#endif  // MATRIXD_TESTS_BENCH_CUDA_DEVICE_TIMING_H_
