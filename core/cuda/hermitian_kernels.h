// The kernels of the device Hermitian check (core/cuda/hermitian_device_check.h). Each launcher
// queues its kernel on `stream` and returns the launch status (cudaGetLastError); none
// synchronises. T: float, double, std::complex<float> or std::complex<double>.
#ifndef MATRIXD_CORE_CUDA_HERMITIAN_KERNELS_H_
#define MATRIXD_CORE_CUDA_HERMITIAN_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace matrixd::cuda {

// For each of `members` matrices of `count` entries stored one after the other at `a`:
// largest_bits[k] = max(largest_bits[k], the bits of max |a_i| of matrix k in double); the bits
// of non-negative doubles order as the doubles do. REQUIRES: the entries finite; the caller sets
// largest_bits[k] (0 to start).
template <typename T>
cudaError_t LaunchLargestMagnitude(const T* a, int64_t count, int64_t members,
                                   unsigned long long* largest_bits, cudaStream_t stream);

// For each of `members` row-major n x n matrices stored one after the other at `a`: first[k] =
// min(first[k], i * n + j) over its pairs i <= j with |a[i][j] - conj(a[j][i])| > factor * (the
// double whose bits are largest_bits[k]): its first offending pair in row-major order. Reads each
// matrix by 32 x 32 tiles and their mirrors. REQUIRES: n < 2^21; the caller sets first[k] (all
// ones: none).
template <typename T>
cudaError_t LaunchFirstHermitianMismatch(const T* a, int64_t n, int64_t members,
                                         const unsigned long long* largest_bits, double factor,
                                         unsigned long long* first, cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_HERMITIAN_KERNELS_H_
