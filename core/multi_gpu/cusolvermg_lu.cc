#include "core/multi_gpu/cusolvermg_lu.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/multi_gpu/pivot_permutation.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {

absl::StatusOr<std::unique_ptr<CusolverMgLu>> CusolverMgLu::Create(std::vector<int> devices,
                                                                   int64_t n, int64_t block,
                                                                   bool staging, DType dtype) {
  if (devices.empty()) return absl::InvalidArgumentError("CusolverMgLu: no devices");
  if (n < 1 || n >= std::numeric_limits<int>::max() || block < 1) {
    return absl::InvalidArgumentError(absl::StrCat("CusolverMgLu: n=", n, " block=", block,
                                                   " (want 1 <= n < 2^31 - 1 and block >= 1)"));
  }
  std::unique_ptr<CusolverMgLu> self(new CusolverMgLu());
  MATRIXD_ASSIGN_OR_RETURN(self->grid_, CusolverMgGrid::Create(std::move(devices)));
  self->n_ = n;
  self->block_ = std::min(block, n);
  MATRIXD_ASSIGN_OR_RETURN(CusolverMgMatrix a, CusolverMgMatrix::Create(*self->grid_, n, n, dtype,
                                                                        self->block_, staging));
  self->a_.emplace(std::move(a));
  for (int device : self->grid_->devices()) {
    MATRIXD_ASSIGN_OR_RETURN(auto pivots,
                             DeviceAllocation<int>::Allocate(device, static_cast<size_t>(n)));
    self->pivot_pointers_.push_back(pivots.get());
    self->pivots_.push_back(std::move(pivots));
    MATRIXD_ASSIGN_OR_RETURN(
        auto summary, DeviceAllocation<double>::Allocate(device, cuda::kDiagonalSummaryFields));
    self->summary_.push_back(std::move(summary));
  }
  const CusolverMgGrid& grid = *self->grid_;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid.devices()[0]));
  MATRIXD_CUDA_RETURN_IF_ERROR(grid.library().getrf_buffer_size(
      grid.handle(), static_cast<int>(n), static_cast<int>(n), self->a_->pointers(), 1, 1,
      self->a_->desc(), self->pivot_pointers_.data(), self->a_->data_type(),
      &self->work_elements_));
  MATRIXD_RETURN_IF_ERROR(
      self->grid_->Workspace(self->work_elements_, self->a_->element_size()).status());
  return self;
}

absl::Status CusolverMgLu::Generate(cuda::GeneratedMatrix matrix, uint64_t seed) {
  MATRIXD_RETURN_IF_ERROR(RequireFloat64("Generate"));
  for (int g = 0; g < gpus(); ++g) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid_->devices()[g]));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cuda::LaunchGenerate(a_->part(g), matrix, seed, this->matrix(g), nullptr));
  }
  return grid_->Synchronize();
}

absl::Status CusolverMgLu::RequireFloat64(const char* what) const {
  if (a_->dtype() == DType::kFloat64) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("CusolverMgLu::", what, " takes float64, not ", DTypeName(a_->dtype())));
}

absl::Status CusolverMgLu::Load(const MatrixView& a) { return a_->Scatter(a); }

absl::Status CusolverMgLu::Factor() {
  for (int g = 0; g < gpus(); ++g) {
    // -1: entries getrf does not write fail every reading's checks in Determinant.
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid_->devices()[g]));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemset(pivots_[g].get(), 0xff, pivots_[g].bytes()));
  }
  const size_t size = a_->element_size();
  MATRIXD_ASSIGN_OR_RETURN(void** work, grid_->Workspace(work_elements_, size));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid_->devices()[0]));
  int info = 0;  // host memory, as cusolverMg wants
  MATRIXD_CUDA_RETURN_IF_ERROR(grid_->library().getrf(
      grid_->handle(), static_cast<int>(n_), static_cast<int>(n_), a_->pointers(), 1, 1, a_->desc(),
      pivot_pointers_.data(), a_->data_type(), work, grid_->workspace_elements(size), &info));
  MATRIXD_RETURN_IF_ERROR(grid_->Synchronize());
  if (info < 0) {
    return absl::InternalError(absl::StrCat("cusolverMgGetrf: argument ", -info, " is wrong"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<int64_t>>> CusolverMgLu::PivotParts() const {
  std::vector<std::vector<int64_t>> parts;
  for (int g = 0; g < gpus(); ++g) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid_->devices()[g]));
    std::vector<int> pivots(pivots_[g].count());
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(pivots.data(), pivots_[g].get(), pivots_[g].bytes(), cudaMemcpyDeviceToHost));
    parts.emplace_back(pivots.begin(), pivots.end());
  }
  return parts;
}

absl::StatusOr<DistributedDeterminant> CusolverMgLu::Determinant() {
  MATRIXD_RETURN_IF_ERROR(RequireFloat64("Determinant"));
  std::array<double, cuda::kDiagonalSummaryFields> total{};
  for (int g = 0; g < gpus(); ++g) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid_->devices()[g]));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemset(summary_[g].get(), 0, summary_[g].bytes()));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cuda::LaunchDiagonalSummary(a_->part(g), matrix(g), summary_[g].get(), nullptr));
    std::array<double, cuda::kDiagonalSummaryFields> local{};
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(local.data(), summary_[g].get(), sizeof(local), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < local.size(); ++i) total[i] += local[i];
  }
  // Two readings of the pivot vector (pivot_counts.h): NVIDIA's example lays it out like A's
  // first row (each GPU holds its column blocks' pivots); the other: all of it on the first GPU.
  MATRIXD_ASSIGN_OR_RETURN(const std::vector<std::vector<int64_t>> parts, PivotParts());
  PivotCounts as_row;
  for (int g = 0; g < gpus(); ++g) {
    const PivotCounts part = CountPivots(parts[g], a_->part(g).local_cols, n_, block_, gpus(), g);
    const auto sum = as_row.ToArray();
    const auto add = part.ToArray();
    std::array<double, PivotCounts::kFields> fields{};
    for (int i = 0; i < PivotCounts::kFields; ++i) fields[i] = sum[i] + add[i];
    as_row = PivotCounts::FromArray(fields.data());
  }
  const PivotCounts whole = CountPivots(parts[0], n_, n_, n_, 1, 0);
  if (total[2] > 0) {
    return DistributedDeterminant{.sign = 0, .log_abs = -std::numeric_limits<double>::infinity()};
  }
  const PivotCounts readings[2] = {as_row, whole};
  return CombineDeterminant(total[0], total[1], total[2], total[3], readings);
}

absl::StatusOr<std::vector<int64_t>> CusolverMgLu::Permutation() {
  MATRIXD_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> parts, PivotParts());
  // The same two readings as Determinant's: like A's first row, or all of it on the first GPU.
  std::vector<int64_t> whole = parts[0];
  for (int g = 0; g < gpus(); ++g) parts[g].resize(static_cast<size_t>(a_->part(g).local_cols));
  const std::vector<int64_t> readings[2] = {GatherCyclicPivots(parts, n_, block_),
                                            std::move(whole)};
  return PermutationFromPivots(readings, n_);
}

absl::Status CusolverMgLu::GatherFactors(void* out) { return a_->Gather(out, false); }

uint64_t CusolverMgLu::device_bytes(int g) const {
  const auto index = static_cast<size_t>(g);
  return a_->device_bytes(g) + pivots_[index].bytes() + summary_[index].bytes();
}

absl::Status CusolverMgLu::Solve(CusolverMgMatrix& b) {
  if (b.dtype() != a_->dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CusolverMgLu::Solve: b is ", DTypeName(b.dtype()), ", want ", DTypeName(a_->dtype())));
  }
  const CusolverMgGrid& grid = *grid_;
  const int nrhs = static_cast<int>(b.cols());
  int64_t elements = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid.devices()[0]));
  MATRIXD_CUDA_RETURN_IF_ERROR(grid.library().getrs_buffer_size(
      grid.handle(), CUBLAS_OP_N, static_cast<int>(n_), nrhs, a_->pointers(), 1, 1, a_->desc(),
      pivot_pointers_.data(), b.pointers(), 1, 1, b.desc(), a_->data_type(), &elements));
  const size_t size = a_->element_size();
  MATRIXD_ASSIGN_OR_RETURN(void** work, grid_->Workspace(elements, size));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid.devices()[0]));
  int info = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      grid.library().getrs(grid.handle(), CUBLAS_OP_N, static_cast<int>(n_), nrhs, a_->pointers(),
                           1, 1, a_->desc(), pivot_pointers_.data(), b.pointers(), 1, 1, b.desc(),
                           a_->data_type(), work, grid_->workspace_elements(size), &info));
  MATRIXD_RETURN_IF_ERROR(grid_->Synchronize());
  if (info < 0) {
    return absl::InternalError(absl::StrCat("cusolverMgGetrs: argument ", -info, " is wrong"));
  }
  return absl::OkStatus();
}

}  // namespace matrixd::multi_gpu
