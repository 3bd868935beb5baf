#include <algorithm>

#include "core/cuda/device_element.cuh"
#include "core/cuda/norm_kernels.h"

namespace matrixd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpSize = 32;
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

// One block per column (grid-stride over columns): a column is contiguous, so the block's loads
// are coalesced; the partial sums meet through warp shuffles and one shared array, in a fixed
// order (repeatable to the bit).
template <typename E>
__global__ void __launch_bounds__(kThreads)
    ColumnAbsSumsKernel(const E* __restrict__ a, int64_t rows, int64_t cols, int64_t ld,
                        bool upper_triangle, double* __restrict__ sums) {
  __shared__ double warp_sums[kThreads / kWarpSize];
  const int tid = threadIdx.x;
  for (int64_t col = blockIdx.x; col < cols; col += gridDim.x) {
    const int64_t height = upper_triangle ? min(rows, col + 1) : rows;
    const E* column = a + col * ld;
    double sum = 0.0;
    for (int64_t i = tid; i < height; i += kThreads) sum += Magnitude(column[i]);
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (tid % kWarpSize == 0) warp_sums[tid / kWarpSize] = sum;
    __syncthreads();
    if (tid == 0) {
      double total = 0.0;
      for (int w = 0; w < kThreads / kWarpSize; ++w) total += warp_sums[w];
      sums[col] = total;
    }
    __syncthreads();
  }
}

template <typename E>
cudaError_t ColumnAbsSumsOf(const E* a, int64_t rows, int64_t cols, int64_t ld, bool upper_triangle,
                            double* sums, cudaStream_t stream) {
  if (cols == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(std::min(cols, kMaxBlocks));
  ColumnAbsSumsKernel<E><<<blocks, kThreads, 0, stream>>>(a, rows, cols, ld, upper_triangle, sums);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchColumnAbsSums(const float* a, int64_t rows, int64_t cols, int64_t ld,
                                bool upper_triangle, double* sums, cudaStream_t stream) {
  return ColumnAbsSumsOf(a, rows, cols, ld, upper_triangle, sums, stream);
}
cudaError_t LaunchColumnAbsSums(const double* a, int64_t rows, int64_t cols, int64_t ld,
                                bool upper_triangle, double* sums, cudaStream_t stream) {
  return ColumnAbsSumsOf(a, rows, cols, ld, upper_triangle, sums, stream);
}
cudaError_t LaunchColumnAbsSums(const std::complex<float>* a, int64_t rows, int64_t cols,
                                int64_t ld, bool upper_triangle, double* sums,
                                cudaStream_t stream) {
  return ColumnAbsSumsOf(reinterpret_cast<const float2*>(a), rows, cols, ld, upper_triangle, sums,
                         stream);
}
cudaError_t LaunchColumnAbsSums(const std::complex<double>* a, int64_t rows, int64_t cols,
                                int64_t ld, bool upper_triangle, double* sums,
                                cudaStream_t stream) {
  return ColumnAbsSumsOf(reinterpret_cast<const double2*>(a), rows, cols, ld, upper_triangle, sums,
                         stream);
}

}  // namespace matrixd::cuda
