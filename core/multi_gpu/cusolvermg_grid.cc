#include "core/multi_gpu/cusolvermg_grid.h"

#include <algorithm>
#include <utility>

#include "core/cuda/cuda_status.h"
#include "core/multi_gpu/peer_access.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {

absl::StatusOr<std::unique_ptr<CusolverMgGrid>> CusolverMgGrid::Create(std::vector<int> devices) {
  if (devices.empty()) return absl::InvalidArgumentError("CusolverMgGrid: no devices");
  std::unique_ptr<CusolverMgGrid> self(new CusolverMgGrid());
  MATRIXD_ASSIGN_OR_RETURN(self->library_, CusolverMgLibrary::Load());
  const CusolverMgLibrary& mg = *self->library_;
  self->devices_ = std::move(devices);
  MATRIXD_CUDA_RETURN_IF_ERROR(mg.create(&self->handle_));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      mg.device_select(self->handle_, self->gpus(), self->devices_.data()));
  MATRIXD_RETURN_IF_ERROR(EnablePeerAccess(self->devices_));
  MATRIXD_CUDA_RETURN_IF_ERROR(mg.create_device_grid(
      &self->grid_, 1, self->gpus(), self->devices_.data(), CUDALIBMG_GRID_MAPPING_COL_MAJOR));
  return self;
}

CusolverMgGrid::~CusolverMgGrid() {
  if (library_ == nullptr) return;
  for (int device : devices_) {
    if (cudaSetDevice(device) == cudaSuccess) cudaDeviceSynchronize();
  }
  if (grid_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(library_->destroy_grid(grid_));
  if (handle_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(library_->destroy(handle_));
}

absl::StatusOr<void**> CusolverMgGrid::Workspace(int64_t elements, size_t element_size) {
  const int64_t bytes = std::max<int64_t>(elements, 1) * static_cast<int64_t>(element_size);
  if (bytes > workspace_bytes_) {
    // The old workspace may still be read by queued work.
    MATRIXD_RETURN_IF_ERROR(ReleaseWorkspace());
    for (int device : devices_) {
      MATRIXD_ASSIGN_OR_RETURN(
          auto work, DeviceAllocation<std::byte>::Allocate(device, static_cast<size_t>(bytes)));
      work_pointers_.push_back(work.get());
      work_.push_back(std::move(work));
    }
    workspace_bytes_ = bytes;
  }
  return work_pointers_.data();
}

absl::Status CusolverMgGrid::ReleaseWorkspace() {
  MATRIXD_RETURN_IF_ERROR(Synchronize());
  work_.clear();
  work_pointers_.clear();
  workspace_bytes_ = 0;
  return absl::OkStatus();
}

absl::Status CusolverMgGrid::Synchronize() const {
  for (int device : devices_) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  }
  return absl::OkStatus();
}

}  // namespace matrixd::multi_gpu
