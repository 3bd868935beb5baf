#include <algorithm>

#include "core/cuda/generated_entries.h"

namespace matrixd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

// One element per thread and step of a grid-stride loop: consecutive threads write consecutive
// elements, so the stores coalesce.
template <typename Scalar, int Parts>
__global__ void GeneratedEntriesKernel(GeneratorOptions options, GeneratedRows rows, int64_t count,
                                       int64_t cols, Scalar* data) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < count; e += stride) {
    const int64_t r = e / cols;
    generator::Entry<Scalar, Parts>(options, rows.Global(r), e - r * cols, cols, data + e * Parts);
  }
}

template <typename Scalar, int Parts>
cudaError_t Launch(const GeneratorOptions& options, const GeneratedRows& rows, int64_t count,
                   int64_t cols, void* data, cudaStream_t stream) {
  const auto blocks =
      static_cast<unsigned>(std::clamp<int64_t>((count + kThreads - 1) / kThreads, 1, kMaxBlocks));
  GeneratedEntriesKernel<Scalar, Parts>
      <<<blocks, kThreads, 0, stream>>>(options, rows, count, cols, static_cast<Scalar*>(data));
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchGeneratedEntries(const GeneratorOptions& options, const GeneratedRows& rows,
                                   int64_t local_rows, int64_t cols, DType dtype, void* data,
                                   cudaStream_t stream) {
  const int64_t count = local_rows * cols;
  if (count == 0) return cudaSuccess;
  cudaError_t status = cudaErrorInvalidValue;
  generator::ForEntryType(dtype, [&]<typename Scalar, int Parts>() {
    status = Launch<Scalar, Parts>(options, rows, count, cols, data, stream);
  });
  return status;
}

}  // namespace matrixd::cuda
