#include "core/multi_gpu/cusolvermg_lu.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/multi_gpu/block_cyclic_part.h"
#include "core/multi_gpu/peer_access.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {

absl::StatusOr<std::unique_ptr<CusolverMgLu>> CusolverMgLu::Create(std::vector<int> devices,
                                                                   int64_t n, int64_t block) {
  if (devices.empty()) return absl::InvalidArgumentError("CusolverMgLu: no devices");
  if (n < 1 || n >= std::numeric_limits<int>::max() || block < 1) {
    return absl::InvalidArgumentError(absl::StrCat("CusolverMgLu: n=", n, " block=", block,
                                                   " (want 1 <= n < 2^31 - 1 and block >= 1)"));
  }
  std::unique_ptr<CusolverMgLu> self(new CusolverMgLu());
  MATRIXD_ASSIGN_OR_RETURN(self->library_, CusolverMgLibrary::Load());
  const CusolverMgLibrary& mg = *self->library_;
  self->devices_ = std::move(devices);
  self->n_ = n;
  self->block_ = std::min(block, n);
  const int gpus = self->gpus();
  MATRIXD_CUDA_RETURN_IF_ERROR(mg.create(&self->handle_));
  MATRIXD_CUDA_RETURN_IF_ERROR(mg.device_select(self->handle_, gpus, self->devices_.data()));
  MATRIXD_RETURN_IF_ERROR(EnablePeerAccess(self->devices_));
  // One process row: the row tile is the whole column (NVIDIA's example does the same).
  MATRIXD_CUDA_RETURN_IF_ERROR(mg.create_device_grid(&self->grid_, 1, gpus, self->devices_.data(),
                                                     CUDALIBMG_GRID_MAPPING_COL_MAJOR));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      mg.create_matrix_desc(&self->desc_, n, n, n, self->block_, CUDA_R_64F, self->grid_));
  const distributed::BlockCyclicLayout layout{
      .rows = n, .cols = n, .block = self->block_, .grid = {.rows = 1, .cols = gpus}};
  for (int g = 0; g < gpus; ++g) {
    const int device = self->devices_[g];
    self->parts_.push_back(PartOf(layout, g));
    MATRIXD_ASSIGN_OR_RETURN(
        auto matrix, DeviceAllocation<double>::Allocate(device, PartElements(self->parts_[g])));
    self->matrix_pointers_.push_back(matrix.get());
    self->matrices_.push_back(std::move(matrix));
    MATRIXD_ASSIGN_OR_RETURN(auto pivots,
                             DeviceAllocation<int>::Allocate(device, static_cast<size_t>(n)));
    self->pivot_pointers_.push_back(pivots.get());
    self->pivots_.push_back(std::move(pivots));
    MATRIXD_ASSIGN_OR_RETURN(
        auto summary, DeviceAllocation<double>::Allocate(device, cuda::kDiagonalSummaryFields));
    self->summary_.push_back(std::move(summary));
  }
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(self->devices_[0]));
  MATRIXD_CUDA_RETURN_IF_ERROR(mg.getrf_buffer_size(
      self->handle_, static_cast<int>(n), static_cast<int>(n), self->matrix_pointers_.data(), 1, 1,
      self->desc_, self->pivot_pointers_.data(), CUDA_R_64F, &self->work_elements_));
  for (int g = 0; g < gpus; ++g) {
    MATRIXD_ASSIGN_OR_RETURN(
        auto work,
        DeviceAllocation<double>::Allocate(
            self->devices_[g], static_cast<size_t>(std::max<int64_t>(self->work_elements_, 1))));
    self->work_pointers_.push_back(work.get());
    self->work_.push_back(std::move(work));
  }
  return self;
}

CusolverMgLu::~CusolverMgLu() {
  if (library_ == nullptr) return;
  for (int device : devices_) {
    if (cudaSetDevice(device) == cudaSuccess) cudaDeviceSynchronize();
  }
  if (desc_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(library_->destroy_matrix_desc(desc_));
  if (grid_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(library_->destroy_grid(grid_));
  if (handle_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(library_->destroy(handle_));
}

absl::Status CusolverMgLu::Generate(cuda::GeneratedMatrix matrix, uint64_t seed) {
  for (int g = 0; g < gpus(); ++g) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(devices_[g]));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cuda::LaunchGenerate(parts_[g], matrix, seed, matrices_[g].get(), nullptr));
  }
  for (int device : devices_) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  }
  return absl::OkStatus();
}

absl::Status CusolverMgLu::Factor() {
  for (int g = 0; g < gpus(); ++g) {
    // -1: entries getrf does not write fail every reading's checks in Determinant.
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(devices_[g]));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemset(pivots_[g].get(), 0xff, pivots_[g].bytes()));
  }
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(devices_[0]));
  int info = 0;  // host memory, as cusolverMg wants
  MATRIXD_CUDA_RETURN_IF_ERROR(library_->getrf(
      handle_, static_cast<int>(n_), static_cast<int>(n_), matrix_pointers_.data(), 1, 1, desc_,
      pivot_pointers_.data(), CUDA_R_64F, work_pointers_.data(), work_elements_, &info));
  for (int device : devices_) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  }
  if (info < 0) {
    return absl::InternalError(absl::StrCat("cusolverMgGetrf: argument ", -info, " is wrong"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DistributedDeterminant> CusolverMgLu::Determinant() {
  std::array<double, cuda::kDiagonalSummaryFields> total{};
  // Two readings of the pivot vector (pivot_counts.h): NVIDIA's example lays it out like A's
  // first row (each GPU holds its column blocks' pivots); the other: all of it on the first GPU.
  PivotCounts as_row;
  PivotCounts whole;
  for (int g = 0; g < gpus(); ++g) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(devices_[g]));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemset(summary_[g].get(), 0, summary_[g].bytes()));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cuda::LaunchDiagonalSummary(parts_[g], matrices_[g].get(), summary_[g].get(), nullptr));
    std::array<double, cuda::kDiagonalSummaryFields> local{};
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(local.data(), summary_[g].get(), sizeof(local), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < local.size(); ++i) total[i] += local[i];
    std::vector<int> pivots(pivots_[g].count());
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(pivots.data(), pivots_[g].get(), pivots_[g].bytes(), cudaMemcpyDeviceToHost));
    const std::vector<int64_t> wide(pivots.begin(), pivots.end());
    const PivotCounts part = CountPivots(wide, parts_[g].local_cols, n_, block_, gpus(), g);
    const auto sum = as_row.ToArray();
    const auto add = part.ToArray();
    std::array<double, PivotCounts::kFields> fields{};
    for (int i = 0; i < PivotCounts::kFields; ++i) fields[i] = sum[i] + add[i];
    as_row = PivotCounts::FromArray(fields.data());
    if (g == 0) whole = CountPivots(wide, n_, n_, n_, 1, 0);
  }
  if (total[2] > 0) {
    return DistributedDeterminant{.sign = 0, .log_abs = -std::numeric_limits<double>::infinity()};
  }
  const PivotCounts readings[2] = {as_row, whole};
  return CombineDeterminant(total[0], total[1], total[2], total[3], readings);
}

}  // namespace matrixd::multi_gpu
