// The row permutation of an LU solve on the device (cuBLAS has no laswp): the kept permutation
// is applied to the right-hand side before the triangular solves, or to the result after them
// for a transposed solve. The launcher queues its kernel on `stream` and returns the launch
// status; it does not synchronise.
#ifndef MATRIXD_CORE_CUDA_SOLVE_KERNELS_H_
#define MATRIXD_CORE_CUDA_SOLVE_KERNELS_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace matrixd::cuda {

// kGather: dst[i, :] = src[permutation[i], :]; kScatter: dst[permutation[i], :] = src[i, :]. src
// and dst are dense row-major rows x cols; permutation holds rows 0-based row indices (a
// permutation of 0..rows-1). REQUIRES: element_size 4, 8 or 16; src and dst do not overlap.
enum class RowPermutation { kGather, kScatter };
cudaError_t LaunchPermuteRows(const void* src, void* dst, const int64_t* permutation, int64_t rows,
                              int64_t cols, size_t element_size, RowPermutation direction,
                              cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_SOLVE_KERNELS_H_
