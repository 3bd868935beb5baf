// The small kernels of a right-looking LU whose panels are factored one at a time
// (core/multi_gpu/multi_gpu_lu.h): turning a panel's pivots into global row numbers, applying a
// panel's row interchanges to other columns (LAPACK's ?laswp), and widening float32 words to
// float64 (that LU runs float32 and complex64 matrices in float64 and complex128). Each launcher
// queues its kernel on `stream` and returns the launch status; none synchronises.
#ifndef MATRIXD_CORE_CUDA_LU_ROW_SWAPS_H_
#define MATRIXD_CORE_CUDA_LU_ROW_SWAPS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace matrixd::cuda {

// pivots[i] += offset for i in [0, count): getrf's 1-based pivots of a panel starting at row
// `offset` become 1-based global rows.
cudaError_t LaunchOffsetPivots(int* pivots, int64_t count, int offset, cudaStream_t stream);

// For i = 0 .. count-1 in order, swaps rows first + i and pivots[i] - 1 (1-based global rows) of
// the `cols` columns at data[r + j * ld], j in [0, cols), of elements of `element_size` bytes (8: a
// double, 16: a complex double; cudaErrorInvalidValue otherwise). REQUIRES: every pivots[i] - 1
// lies in [first + i, ld) (what getrf returns, offset as above); data aligned to element_size.
cudaError_t LaunchRowSwaps(void* data, size_t element_size, int64_t ld, int64_t cols,
                           const int* pivots, int64_t first, int64_t count, cudaStream_t stream);

// dst[i] = src[i] for i in [0, count): float32 words to float64 words (a complex64 element is two
// words, so it widens to a complex128). src and dst do not overlap.
cudaError_t LaunchWidenFloats(const float* src, double* dst, int64_t count, cudaStream_t stream);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_LU_ROW_SWAPS_H_
