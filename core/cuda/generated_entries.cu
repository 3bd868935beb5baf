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
  switch (dtype) {
    case DType::kFloat32:
      return Launch<float, 1>(options, rows, count, cols, data, stream);
    case DType::kFloat64:
      return Launch<double, 1>(options, rows, count, cols, data, stream);
    case DType::kComplex64:
      return Launch<float, 2>(options, rows, count, cols, data, stream);
    case DType::kComplex128:
      return Launch<double, 2>(options, rows, count, cols, data, stream);
    case DType::kInt64:
      return Launch<int64_t, 1>(options, rows, count, cols, data, stream);
    case DType::kUInt32:
      return Launch<uint32_t, 1>(options, rows, count, cols, data, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace matrixd::cuda
