// The column sums of |a_ij| of a device matrix, from which its 1-norm (their maximum) follows:
// what a condition estimate needs of A before the factorization overwrites it. The launcher queues
// its kernel on `stream` and returns the launch status (cudaGetLastError); it does not
// synchronise.
#ifndef MATRIXD_CORE_CUDA_NORM_KERNELS_H_
#define MATRIXD_CORE_CUDA_NORM_KERNELS_H_

#include <cuda_runtime.h>

#include <complex>
#include <cstdint>

namespace matrixd::cuda {

// sums[j] = sum over i < height(j) of |a[i + j * ld]| in double, for j < cols: a column-major
// rows x cols matrix (height rows), or its upper triangle (height min(rows, j + 1)) when
// `upper_triangle`. |z| of a complex entry is its modulus, as LAPACK's ?lange takes it.
// REQUIRES: ld >= rows; `sums` holds cols doubles of device memory.
cudaError_t LaunchColumnAbsSums(const float* a, int64_t rows, int64_t cols, int64_t ld,
                                bool upper_triangle, double* sums, cudaStream_t stream);
cudaError_t LaunchColumnAbsSums(const double* a, int64_t rows, int64_t cols, int64_t ld,
                                bool upper_triangle, double* sums, cudaStream_t stream);
cudaError_t LaunchColumnAbsSums(const std::complex<float>* a, int64_t rows, int64_t cols,
                                int64_t ld, bool upper_triangle, double* sums, cudaStream_t stream);
cudaError_t LaunchColumnAbsSums(const std::complex<double>* a, int64_t rows, int64_t cols,
                                int64_t ld, bool upper_triangle, double* sums, cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_NORM_KERNELS_H_
