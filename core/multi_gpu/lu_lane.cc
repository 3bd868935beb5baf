#include "core/multi_gpu/lu_lane.h"

#include <utility>

#include "core/cuda/cuda_status.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

absl::StatusOr<LuLane::EventPair> CreateEventPair() {
  MATRIXD_ASSIGN_OR_RETURN(cuda::CudaEvent even, cuda::CudaEvent::Create());
  MATRIXD_ASSIGN_OR_RETURN(cuda::CudaEvent odd, cuda::CudaEvent::Create());
  return LuLane::EventPair{std::move(even), std::move(odd)};
}

}  // namespace

LuLane::LuLane(int device, cuda::CudaStream panel, cuda::CudaStream update, EventPair factored,
               EventPair sent, EventPair lookahead_done, EventPair released, EventPair update_done)
    : device(device),
      panel(std::move(panel)),
      update(std::move(update)),
      factored(std::move(factored)),
      sent(std::move(sent)),
      lookahead_done(std::move(lookahead_done)),
      released(std::move(released)),
      update_done(std::move(update_done)) {}

absl::StatusOr<std::unique_ptr<LuLane>> LuLane::Create(int device) {
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  int lowest = 0;
  int highest = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  MATRIXD_ASSIGN_OR_RETURN(cuda::CudaStream panel, cuda::CudaStream::CreateWithPriority(highest));
  MATRIXD_ASSIGN_OR_RETURN(cuda::CudaStream update, cuda::CudaStream::CreateWithPriority(lowest));
  MATRIXD_ASSIGN_OR_RETURN(EventPair factored, CreateEventPair());
  MATRIXD_ASSIGN_OR_RETURN(EventPair sent, CreateEventPair());
  MATRIXD_ASSIGN_OR_RETURN(EventPair lookahead_done, CreateEventPair());
  MATRIXD_ASSIGN_OR_RETURN(EventPair released, CreateEventPair());
  MATRIXD_ASSIGN_OR_RETURN(EventPair update_done, CreateEventPair());
  std::unique_ptr<LuLane> lane(
      new LuLane(device, std::move(panel), std::move(update), std::move(factored), std::move(sent),
                 std::move(lookahead_done), std::move(released), std::move(update_done)));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasCreate(&lane->panel_blas));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetStream(lane->panel_blas, lane->panel.get()));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasCreate(&lane->update_blas));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetStream(lane->update_blas, lane->update.get()));
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnCreate(&lane->solver));
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnSetStream(lane->solver, lane->panel.get()));
  return lane;
}

LuLane::~LuLane() {
  // The device stays current while the members (events, then streams) are destroyed.
  if (cudaSetDevice(device) != cudaSuccess) return;
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaStreamSynchronize(panel.get()));
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaStreamSynchronize(update.get()));
  if (solver != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cusolverDnDestroy(solver));
  if (panel_blas != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cublasDestroy(panel_blas));
  if (update_blas != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cublasDestroy(update_blas));
}

}  // namespace matrixd::multi_gpu
