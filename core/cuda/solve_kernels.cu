#include <algorithm>

#include "core/cuda/element_bits.cuh"
#include "core/cuda/solve_kernels.h"

namespace matrixd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

// One element per thread step, in dst's (gather) or src's (scatter) order, so that one side of the
// copy is always coalesced; the other reads or writes whole rows, contiguous for several columns.
template <typename E>
__global__ void PermuteRowsKernel(const E* __restrict__ src, E* __restrict__ dst,
                                  const int64_t* __restrict__ permutation, int64_t rows,
                                  int64_t cols, bool scatter) {
  const int64_t count = rows * cols;
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < count;
       k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = k / cols;
    const int64_t c = k - r * cols;
    const int64_t other = permutation[r] * cols + c;
    if (scatter) {
      dst[other] = src[k];
    } else {
      dst[k] = src[other];
    }
  }
}

}  // namespace

cudaError_t LaunchPermuteRows(const void* src, void* dst, const int64_t* permutation, int64_t rows,
                              int64_t cols, size_t element_size, RowPermutation direction,
                              cudaStream_t stream) {
  const int64_t count = rows * cols;
  if (count == 0) return cudaSuccess;
  const unsigned blocks =
      static_cast<unsigned>(std::clamp<int64_t>((count + kThreads - 1) / kThreads, 1, kMaxBlocks));
  return ForElementSize(element_size, [&](auto bits) {
    using E = decltype(bits);
    PermuteRowsKernel<E><<<blocks, kThreads, 0, stream>>>(
        static_cast<const E*>(src), static_cast<E*>(dst), permutation, rows, cols,
        direction == RowPermutation::kScatter);
    return cudaGetLastError();
  });
}

}  // namespace matrixd::cuda
