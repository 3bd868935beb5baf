// One cusolverMg session over several GPUs of this process: the library (loaded at run time,
// cusolvermg_library.h), a handle with the GPUs selected and peer access enabled between them, a
// 1 x R device grid (one process row, as NVIDIA's examples), and the per-GPU workspace the
// routines share. The matrices on it are CusolverMgMatrix (cusolvermg_matrix.h). Moved never
// copied; destroying it waits for every GPU first.
#ifndef MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_GRID_H_
#define MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_GRID_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/multi_gpu/cusolvermg_library.h"
#include "core/multi_gpu/device_allocation.h"

namespace matrixd::multi_gpu {

class CusolverMgGrid {
 public:
  // UNAVAILABLE when cusolverMg cannot be loaded; INVALID_ARGUMENT for no devices; INTERNAL for
  // CUDA and cuSOLVER errors.
  static absl::StatusOr<std::unique_ptr<CusolverMgGrid>> Create(std::vector<int> devices);
  ~CusolverMgGrid();
  CusolverMgGrid(const CusolverMgGrid&) = delete;
  CusolverMgGrid& operator=(const CusolverMgGrid&) = delete;

  const CusolverMgLibrary& library() const { return *library_; }
  cusolverMgHandle_t handle() const { return handle_; }
  cudaLibMgGrid_t grid() const { return grid_; }
  const std::vector<int>& devices() const { return devices_; }
  int gpus() const { return static_cast<int>(devices_.size()); }

  // At least `elements` elements of `element_size` bytes (cusolverMg counts its workspace in
  // elements of the matrix's type) of workspace on every GPU (grown, never shrunk), as the pointer
  // array cusolverMg takes. RESOURCE_EXHAUSTED when it does not fit.
  absl::StatusOr<void**> Workspace(int64_t elements, size_t element_size);
  // The workspace's size in elements of `element_size` bytes, as cusolverMg's lwork.
  int64_t workspace_elements(size_t element_size) const {
    return workspace_bytes_ / static_cast<int64_t>(element_size);
  }

  // Frees the workspace (after waiting for the work that may read it), so that a factorization
  // kept on the grid holds only its matrices; the next Workspace call allocates it again.
  absl::Status ReleaseWorkspace();

  // Waits for all work queued on every GPU (cusolverMg's routines return before their kernels
  // end on some GPUs).
  absl::Status Synchronize() const;

 private:
  CusolverMgGrid() = default;

  // Declared first, so destroyed last: the handles below are the library's.
  std::unique_ptr<CusolverMgLibrary> library_;
  std::vector<int> devices_;
  cusolverMgHandle_t handle_ = nullptr;
  cudaLibMgGrid_t grid_ = nullptr;
  std::vector<DeviceAllocation<std::byte>> work_;
  std::vector<void*> work_pointers_;
  int64_t workspace_bytes_ = 0;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_GRID_H_
