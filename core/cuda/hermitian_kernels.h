// The kernels of the device Hermitian check (core/cuda/hermitian_device_check.h). Each launcher
// queues its kernel on `stream` and returns the launch status (cudaGetLastError); none
// synchronises. T: float, double, std::complex<float> or std::complex<double>.
#ifndef MATRIXD_CORE_CUDA_HERMITIAN_KERNELS_H_
#define MATRIXD_CORE_CUDA_HERMITIAN_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace matrixd::cuda {

// *largest_bits = max(*largest_bits, the bits of max |a_i| in double) over the `count` entries at
// `a`: the bits of non-negative doubles order as the doubles do. REQUIRES: the entries finite; the
// caller sets *largest_bits (0 to start).
template <typename T>
cudaError_t LaunchLargestMagnitude(const T* a, int64_t count, unsigned long long* largest_bits,
                                   cudaStream_t stream);

// *first = min(*first, i * n + j) over the pairs i <= j of the row-major n x n matrix at `a` with
// |a[i][j] - conj(a[j][i])| > factor * (the double whose bits are *largest_bits): the first
// offending pair in row-major order. Reads A by 32 x 32 tiles and their mirrors. REQUIRES: n <
// 2^21; the caller sets *first (all ones: none).
template <typename T>
cudaError_t LaunchFirstHermitianMismatch(const T* a, int64_t n,
                                         const unsigned long long* largest_bits, double factor,
                                         unsigned long long* first, cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_HERMITIAN_KERNELS_H_
