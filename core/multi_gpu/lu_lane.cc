#include "core/multi_gpu/lu_lane.h"

#include "core/cuda/cuda_status.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {

absl::StatusOr<std::unique_ptr<LuLane>> LuLane::Create(int device) {
  std::unique_ptr<LuLane> lane(new LuLane());
  lane->device = device;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  int lowest = 0;
  int highest = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithPriority(&lane->panel, cudaStreamNonBlocking, highest));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithPriority(&lane->update, cudaStreamNonBlocking, lowest));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasCreate(&lane->panel_blas));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetStream(lane->panel_blas, lane->panel));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasCreate(&lane->update_blas));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetStream(lane->update_blas, lane->update));
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnCreate(&lane->solver));
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnSetStream(lane->solver, lane->panel));
  for (auto* events :
       {&lane->factored, &lane->sent, &lane->lookahead_done, &lane->released, &lane->update_done}) {
    for (cudaEvent_t& event : *events) {
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    }
  }
  return lane;
}

LuLane::~LuLane() {
  if (cudaSetDevice(device) != cudaSuccess) return;
  // Work still queued (a failed Factor returns early) must not outlive the handles it uses.
  if (panel != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaStreamSynchronize(panel));
  if (update != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaStreamSynchronize(update));
  for (auto* events : {&factored, &sent, &lookahead_done, &released, &update_done}) {
    for (cudaEvent_t event : *events) {
      if (event != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaEventDestroy(event));
    }
  }
  if (solver != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cusolverDnDestroy(solver));
  if (panel_blas != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cublasDestroy(panel_blas));
  if (update_blas != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cublasDestroy(update_blas));
  if (panel != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaStreamDestroy(panel));
  if (update != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaStreamDestroy(update));
}

}  // namespace matrixd::multi_gpu
