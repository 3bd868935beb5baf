#include "core/multi_gpu/operand_source.h"

#include <utility>

#include "core/cuda/cuda_status.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {

absl::StatusOr<OperandSource> OperandSource::Of(const MatrixView& view) {
  OperandSource source;
  if (!view.on_device()) return source;
  cudaPointerAttributes attributes{};
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaPointerGetAttributes(&attributes, view.data));
  // Managed or mapped host memory is readable from every GPU: pulled like host memory.
  if (attributes.type != cudaMemoryTypeDevice) return source;
  source.device_ = attributes.device;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(source.device_));
  MATRIXD_ASSIGN_OR_RETURN(cuda::CudaStream stream, cuda::CudaStream::Create());
  source.stream_.emplace(std::move(stream));
  return source;
}

absl::StatusOr<cudaStream_t> OperandSource::StreamFor(int device, cudaStream_t pulling) const {
  const bool pushed = stream_.has_value();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(pushed ? device_ : device));
  return pushed ? stream_->get() : pulling;
}

absl::Status OperandSource::Synchronize() const {
  if (!stream_.has_value()) return absl::OkStatus();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_->get()));
  return absl::OkStatus();
}

}  // namespace matrixd::multi_gpu
