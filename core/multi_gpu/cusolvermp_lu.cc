#include "core/multi_gpu/cusolvermp_lu.h"

#include <cusolverMp.h>

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/multi_gpu/block_cyclic_part.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {

absl::StatusOr<std::unique_ptr<CusolverMpLu>> CusolverMpLu::Create(NcclRank& rank,
                                                                   distributed::GridShape grid,
                                                                   int64_t n, int64_t block) {
  if (grid.rows < 1 || grid.cols < 1 || grid.size() != rank.ranks()) {
    return absl::InvalidArgumentError(absl::StrCat("CusolverMpLu: grid ", grid.rows, "x", grid.cols,
                                                   " for ", rank.ranks(), " ranks"));
  }
  if (n < 1 || block < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("CusolverMpLu: n=", n, " block=", block, " (both must be positive)"));
  }
  std::unique_ptr<CusolverMpLu> self(new CusolverMpLu(rank));
  self->n_ = n;
  self->part_ = PartOf({.rows = n, .cols = n, .block = block, .grid = grid}, rank.rank());
  MATRIXD_ASSIGN_OR_RETURN(self->a_, DeviceArray<double>::Allocate(PartElements(self->part_)));
  // Room for either layout of the pivot vector (pivot_counts.h), with ScaLAPACK's extra block.
  const auto pivot_count = static_cast<size_t>(
      std::max<int64_t>(self->part_.local_cols, self->part_.local_rows) + block);
  MATRIXD_ASSIGN_OR_RETURN(self->pivots_, DeviceArray<int64_t>::Allocate(pivot_count));
  MATRIXD_ASSIGN_OR_RETURN(self->info_, DeviceArray<int>::Allocate(1));
  MATRIXD_ASSIGN_OR_RETURN(self->summary_,
                           DeviceArray<double>::Allocate(cuda::kDiagonalSummaryFields));

  // cuSOLVERMp takes no default stream; NcclRank's is its own.
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverMpCreate(&self->handle_, rank.device(), rank.stream()));
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverMpCreateDeviceGrid(self->handle_, &self->grid_, rank.comm(),
                                                          grid.rows, grid.cols,
                                                          CUSOLVERMP_GRID_MAPPING_ROW_MAJOR));
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverMpCreateMatrixDesc(
      &self->a_desc_, self->grid_, CUDA_R_64F, n, n, block, block, 0, 0, self->part_.ld));
  size_t device_bytes = 0;
  size_t host_bytes = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverMpGetrf_bufferSize(self->handle_, n, n, self->a_.get(), 1, 1,
                                                          self->a_desc_, self->pivots_.get(),
                                                          CUDA_R_64F, &device_bytes, &host_bytes));
  MATRIXD_ASSIGN_OR_RETURN(self->device_work_, DeviceArray<unsigned char>::Allocate(device_bytes));
  self->host_work_.resize(host_bytes);
  return self;
}

CusolverMpLu::~CusolverMpLu() {
  cudaStreamSynchronize(rank_.stream());
  if (a_desc_ != nullptr) cusolverMpDestroyMatrixDesc(a_desc_);
  if (grid_ != nullptr) cusolverMpDestroyGrid(grid_);
  if (handle_ != nullptr) cusolverMpDestroy(handle_);
}

absl::Status CusolverMpLu::Factor() {
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(info_.get(), 0, sizeof(int), rank_.stream()));
  // -1 everywhere: entries getrf does not write fail every reading's checks in Determinant.
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(pivots_.get(), 0xff, pivots_.bytes(), rank_.stream()));
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverMpGetrf(
      handle_, n_, n_, a_.get(), 1, 1, a_desc_, pivots_.get(), CUDA_R_64F, device_work_.get(),
      device_work_.bytes(), host_work_.data(), host_work_.size(), info_.get()));
  return absl::OkStatus();
}

absl::StatusOr<DistributedDeterminant> CusolverMpLu::Determinant() {
  cudaStream_t stream = rank_.stream();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(summary_.get(), 0, summary_.bytes(), stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cuda::LaunchDiagonalSummary(part_, a_.get(), summary_.get(), stream));
  std::array<double, cuda::kDiagonalSummaryFields> diagonal{};
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(diagonal.data(), summary_.get(), sizeof(diagonal),
                                               cudaMemcpyDeviceToHost, stream));
  // Two readings of the pivot vector (see pivot_counts.h): like row 1 of A, held by process row 0
  // over the process columns; like column 1 of A (ScaLAPACK), held by process column 0 over the
  // process rows. Ranks holding neither add nothing.
  const bool holds_row = part_.grid_row == 0;
  const bool holds_column = part_.grid_col == 0;
  std::vector<int64_t> pivots;
  if (holds_row || holds_column) {
    pivots.resize(pivots_.count());
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(pivots.data(), pivots_.get(), pivots_.bytes(),
                                                 cudaMemcpyDeviceToHost, stream));
  }
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  PivotCounts as_row;
  PivotCounts as_column;
  if (holds_row) {
    as_row =
        CountPivots(pivots, part_.local_cols, n_, part_.block, part_.grid_cols, part_.grid_col);
  }
  if (holds_column) {
    as_column =
        CountPivots(pivots, part_.local_rows, n_, part_.block, part_.grid_rows, part_.grid_row);
  }
  constexpr int kDiagonal = cuda::kDiagonalSummaryFields;
  std::array<double, kDiagonal + 2 * PivotCounts::kFields> local{};
  std::copy(diagonal.begin(), diagonal.end(), local.begin());
  const auto row_fields = as_row.ToArray();
  const auto column_fields = as_column.ToArray();
  std::copy(row_fields.begin(), row_fields.end(), local.begin() + kDiagonal);
  std::copy(column_fields.begin(), column_fields.end(),
            local.begin() + kDiagonal + PivotCounts::kFields);
  MATRIXD_ASSIGN_OR_RETURN(std::vector<double> total, rank_.AllReduce(local, ncclSum));
  const PivotCounts readings[2] = {
      PivotCounts::FromArray(&total[kDiagonal]),
      PivotCounts::FromArray(&total[kDiagonal + PivotCounts::kFields])};
  return CombineDeterminant(total[0], total[1], total[2], total[3], readings);
}

}  // namespace matrixd::multi_gpu
