#include "core/cuda/hermitian_device_check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <complex>
#include <limits>
#include <vector>

#include "core/cuda/cuda_status.h"
#include "core/cuda/hermitian_kernels.h"
#include "core/hermitian_check.h"
#include "core/status_macros.h"

namespace matrixd::cuda {

template <typename T>
absl::Status RequireHermitianOnDevice(const T* a, int64_t n, int64_t batch_count,
                                      absl::string_view field, DeviceContext& context) {
  if (n == 0) return absl::OkStatus();
  const cudaStream_t stream = context.stream();
  const int64_t members = std::max<int64_t>(batch_count, 1);
  const size_t words = static_cast<size_t>(members);
  // Each matrix's largest magnitude's bits, and its first offending index (all ones: none).
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                           context.Allocate(2 * words * sizeof(unsigned long long)));
  unsigned long long* largest = buffer.as<unsigned long long>();
  unsigned long long* first = largest + words;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(largest, 0, words * sizeof(unsigned long long), stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(first, 0xff, words * sizeof(unsigned long long), stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchLargestMagnitude(a, n * n, members, largest, stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchFirstHermitianMismatch(
      a, n, members, largest, HermitianTolerance<T>(1.0), first, stream));
  std::vector<unsigned long long> firsts(words);
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      firsts.data(), first, words * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
  MATRIXD_RETURN_IF_ERROR(context.Synchronize());
  const auto none = std::numeric_limits<unsigned long long>::max();
  const auto offending = std::find_if(firsts.begin(), firsts.end(),
                                      [none](unsigned long long f) { return f != none; });
  if (offending == firsts.end()) return absl::OkStatus();
  const auto k = static_cast<int64_t>(offending - firsts.begin());
  const auto index = static_cast<int64_t>(*offending);
  const int64_t i = index / n;
  const int64_t j = index % n;
  const T* matrix = a + k * n * n;
  T upper{};
  T lower{};
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&upper, matrix + i * n + j, sizeof(T), cudaMemcpyDeviceToHost, stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&lower, matrix + j * n + i, sizeof(T), cudaMemcpyDeviceToHost, stream));
  MATRIXD_RETURN_IF_ERROR(context.Synchronize());
  return HermitianMismatchError(field, batch_count, k, i, j, upper, lower);
}

#define MATRIXD_INSTANTIATE_HERMITIAN_CHECK(T)                                                     \
  template absl::Status RequireHermitianOnDevice<T>(const T*, int64_t, int64_t, absl::string_view, \
                                                    DeviceContext&);
MATRIXD_INSTANTIATE_HERMITIAN_CHECK(float)
MATRIXD_INSTANTIATE_HERMITIAN_CHECK(double)
MATRIXD_INSTANTIATE_HERMITIAN_CHECK(std::complex<float>)
MATRIXD_INSTANTIATE_HERMITIAN_CHECK(std::complex<double>)
#undef MATRIXD_INSTANTIATE_HERMITIAN_CHECK

}  // namespace matrixd::cuda
