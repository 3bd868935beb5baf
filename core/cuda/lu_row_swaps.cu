#include <algorithm>

#include "core/cuda/lu_row_swaps.h"

namespace matrixd::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kPivotChunk = 1024;  // pivots staged in shared memory at a time

__global__ void OffsetPivotsKernel(int* pivots, int64_t count, int offset) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < count) pivots[i] += offset;
}

// One thread per column: the interchanges of a column must run in order (a row may move twice),
// while columns are independent. The pivots are read once per block from shared memory.
template <typename T>
__global__ void RowSwapsKernel(T* data, int64_t ld, int64_t cols, const int* pivots, int64_t first,
                               int64_t count) {
  __shared__ int staged[kPivotChunk];
  const int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  T* column = data + (j < cols ? j : 0) * ld;
  for (int64_t base = 0; base < count; base += kPivotChunk) {
    const int64_t chunk = count - base < kPivotChunk ? count - base : kPivotChunk;
    __syncthreads();
    for (int64_t t = threadIdx.x; t < chunk; t += blockDim.x) staged[t] = pivots[base + t];
    __syncthreads();
    if (j >= cols) continue;
    for (int64_t t = 0; t < chunk; ++t) {
      const int64_t row = first + base + t;
      const int64_t pivot = staged[t] - 1;
      if (pivot == row) continue;
      const T upper = column[row];
      column[row] = column[pivot];
      column[pivot] = upper;
    }
  }
}

__global__ void WidenFloatsKernel(const float* src, double* dst, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    dst[i] = static_cast<double>(src[i]);
  }
}

}  // namespace

cudaError_t LaunchOffsetPivots(int* pivots, int64_t count, int offset, cudaStream_t stream) {
  if (count <= 0 || offset == 0) return cudaSuccess;
  const auto blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
  OffsetPivotsKernel<<<blocks, kThreads, 0, stream>>>(pivots, count, offset);
  return cudaGetLastError();
}

cudaError_t LaunchRowSwaps(void* data, size_t element_size, int64_t ld, int64_t cols,
                           const int* pivots, int64_t first, int64_t count, cudaStream_t stream) {
  if (element_size != sizeof(double) && element_size != sizeof(double2)) {
    return cudaErrorInvalidValue;
  }
  if (cols <= 0 || count <= 0) return cudaSuccess;
  const auto blocks = static_cast<unsigned>((cols + kThreads - 1) / kThreads);
  if (element_size == sizeof(double)) {
    RowSwapsKernel<<<blocks, kThreads, 0, stream>>>(static_cast<double*>(data), ld, cols, pivots,
                                                    first, count);
  } else {
    RowSwapsKernel<<<blocks, kThreads, 0, stream>>>(static_cast<double2*>(data), ld, cols, pivots,
                                                    first, count);
  }
  return cudaGetLastError();
}

cudaError_t LaunchWidenFloats(const float* src, double* dst, int64_t count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  constexpr int64_t kMaxBlocks = 4096;  // a grid-stride loop covers the rest
  const auto blocks =
      static_cast<unsigned>(std::min<int64_t>((count + kThreads - 1) / kThreads, kMaxBlocks));
  WidenFloatsKernel<<<blocks, kThreads, 0, stream>>>(src, dst, count);
  return cudaGetLastError();
}

}  // namespace matrixd::cuda
