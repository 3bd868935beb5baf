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

// The same column sums taken by a transpose's own pass: dst := src^T for src column-major rows x
// cols (leading dimension src_ld) and dst column-major cols x rows (leading dimension dst_ld), and
// sums[i] := sum over j < cols of |src(i, j)| for i < rows, i.e. the column sums of |dst|: the
// 1-norm of a matrix that a layout change brings in anyway, without a second pass over it. Each
// thread block takes a strip of kTransposeSumStripTiles 32 x 32 tiles along a row of tiles and
// leaves one partial sum per row and strip in `partials`; a second kernel adds a row's partials
// in strip order. A fixed order, so repeatable to the bit (not LaunchColumnAbsSums's bits).
// REQUIRES: partials holds TransposeSumPartials(rows, cols) doubles and sums `rows` doubles of
// device memory; src and dst do not overlap.
inline constexpr int64_t kTransposeSumStripTiles = 8;
inline int64_t TransposeSumPartials(int64_t rows, int64_t cols) {
  const int64_t strips = (cols + 32 * kTransposeSumStripTiles - 1) / (32 * kTransposeSumStripTiles);
  return rows * strips;
}
cudaError_t LaunchTransposeWithAbsSums(const float* src, int64_t rows, int64_t cols, int64_t src_ld,
                                       float* dst, int64_t dst_ld, double* partials, double* sums,
                                       cudaStream_t stream);
cudaError_t LaunchTransposeWithAbsSums(const double* src, int64_t rows, int64_t cols,
                                       int64_t src_ld, double* dst, int64_t dst_ld,
                                       double* partials, double* sums, cudaStream_t stream);
cudaError_t LaunchTransposeWithAbsSums(const std::complex<float>* src, int64_t rows, int64_t cols,
                                       int64_t src_ld, std::complex<float>* dst, int64_t dst_ld,
                                       double* partials, double* sums, cudaStream_t stream);
cudaError_t LaunchTransposeWithAbsSums(const std::complex<double>* src, int64_t rows, int64_t cols,
                                       int64_t src_ld, std::complex<double>* dst, int64_t dst_ld,
                                       double* partials, double* sums, cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_NORM_KERNELS_H_
