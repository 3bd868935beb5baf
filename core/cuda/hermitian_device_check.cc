#include "core/cuda/hermitian_device_check.h"

#include <cuda_runtime.h>

#include <complex>
#include <limits>

#include "core/cuda/cuda_status.h"
#include "core/cuda/hermitian_kernels.h"
#include "core/hermitian_check.h"
#include "core/status_macros.h"

namespace matrixd::cuda {

template <typename T>
absl::Status RequireHermitianOnDevice(const T* a, int64_t n, absl::string_view field,
                                      DeviceContext& context) {
  if (n == 0) return absl::OkStatus();
  const cudaStream_t stream = context.stream();
  // [0]: the largest magnitude's bits; [1]: the first offending index (all ones: none).
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer words, context.Allocate(2 * sizeof(unsigned long long)));
  unsigned long long* largest = words.as<unsigned long long>();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(largest, 0, sizeof(unsigned long long), stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(largest + 1, 0xff, sizeof(unsigned long long), stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchLargestMagnitude(a, n * n, largest, stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchFirstHermitianMismatch(a, n, largest, HermitianTolerance<T>(1.0), largest + 1, stream));
  unsigned long long first = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&first, largest + 1, sizeof(first), cudaMemcpyDeviceToHost, stream));
  MATRIXD_RETURN_IF_ERROR(context.Synchronize());
  if (first == std::numeric_limits<unsigned long long>::max()) return absl::OkStatus();
  const auto index = static_cast<int64_t>(first);
  const int64_t i = index / n;
  const int64_t j = index % n;
  T upper{};
  T lower{};
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&upper, a + i * n + j, sizeof(T), cudaMemcpyDeviceToHost, stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&lower, a + j * n + i, sizeof(T), cudaMemcpyDeviceToHost, stream));
  MATRIXD_RETURN_IF_ERROR(context.Synchronize());
  return HermitianMismatchError(field, /*batch_count=*/0, /*k=*/0, i, j, upper, lower);
}

template absl::Status RequireHermitianOnDevice<float>(const float*, int64_t, absl::string_view,
                                                      DeviceContext&);
template absl::Status RequireHermitianOnDevice<double>(const double*, int64_t, absl::string_view,
                                                       DeviceContext&);
template absl::Status RequireHermitianOnDevice<std::complex<float>>(const std::complex<float>*,
                                                                    int64_t, absl::string_view,
                                                                    DeviceContext&);
template absl::Status RequireHermitianOnDevice<std::complex<double>>(const std::complex<double>*,
                                                                     int64_t, absl::string_view,
                                                                     DeviceContext&);

}  // namespace matrixd::cuda
