// The kernels of iterative refinement on the device (core/cuda/refine.h): the residual B - A X
// summed in double-double, A's row sums for ||A||_inf, and X += D. Elements are real (parts = 1)
// or complex (parts = 2, interleaved real and imaginary components of type R). Each launcher
// queues its kernel on `stream` and returns the launch status; none synchronises.
#ifndef MATRIXD_CORE_CUDA_REFINE_KERNELS_H_
#define MATRIXD_CORE_CUDA_REFINE_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace matrixd::cuda {

// r = b - a x and row_norms[i] = sum_c |r[i, c]| for a n x n row-major, x, b and r n x nrhs
// column-major (leading dimension n). Each entry is summed in double-double from exact products
// (FMA) and rounded once to R; the per-thread partials are combined by a fixed tree, so repeats
// are bit-identical. r may alias neither a, x nor b. R is float or double; parts 1 or 2.
template <typename R>
cudaError_t LaunchRefineResidual(const R* a, const R* x, const R* b, R* r, double* row_norms,
                                 int64_t n, int64_t nrhs, int parts, cudaStream_t stream);

// row_sums[i] = sum_j |a[i, j]| (a rows x cols, row-major), in double.
template <typename R>
cudaError_t LaunchRowAbsSums(const R* a, int64_t rows, int64_t cols, int parts, double* row_sums,
                             cudaStream_t stream);

// x[e] += d[e] for e in [0, count) (components of R).
template <typename R>
cudaError_t LaunchAddInPlace(R* x, const R* d, int64_t count, cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_REFINE_KERNELS_H_
