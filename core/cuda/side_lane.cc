#include "core/cuda/side_lane.h"

#include <utility>

#include "core/cuda/cuda_status.h"
#include "core/status_macros.h"

namespace matrixd::cuda {

absl::StatusOr<std::unique_ptr<SideLane>> SideLane::Create() {
  int lowest = 0;
  int highest = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  MATRIXD_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::CreateWithPriority(highest));
  std::unique_ptr<SideLane> lane(new SideLane(std::move(stream)));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasCreate(&lane->cublas_));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetStream(lane->cublas_, lane->stream()));
  // As the context's handle (device_context.cc): repeatable sums, no atomics.
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetAtomicsMode(lane->cublas_, CUBLAS_ATOMICS_NOT_ALLOWED));
  return lane;
}

SideLane::~SideLane() {
  // Queued work finishes before the handle goes (the stream itself is destroyed after this body).
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaStreamSynchronize(stream()));
  if (cublas_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cublasDestroy(cublas_));
}

}  // namespace matrixd::cuda
