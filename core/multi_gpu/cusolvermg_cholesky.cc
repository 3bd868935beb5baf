#include "core/multi_gpu/cusolvermg_cholesky.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {

absl::StatusOr<std::unique_ptr<CusolverMgCholesky>> CusolverMgCholesky::Create(
    std::vector<int> devices, int64_t n, int64_t block, DType dtype) {
  std::unique_ptr<CusolverMgCholesky> self(new CusolverMgCholesky());
  MATRIXD_ASSIGN_OR_RETURN(self->grid_, CusolverMgGrid::Create(std::move(devices)));
  self->n_ = n;
  MATRIXD_ASSIGN_OR_RETURN(CusolverMgMatrix a,
                           CusolverMgMatrix::Create(*self->grid_, n, n, dtype, block, true));
  self->a_.emplace(std::move(a));
  return self;
}

absl::Status CusolverMgCholesky::Load(const MatrixView& a) { return a_->Scatter(a); }

absl::StatusOr<int> CusolverMgCholesky::Factor() {
  const CusolverMgGrid& grid = *grid_;
  const int n = static_cast<int>(n_);
  int64_t elements = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid.devices()[0]));
  // LOWER: A's lower triangle, the one the single-GPU Cholesky reads too (core/cuda/factorize.cc
  // reads the upper triangle of A^T = conj(A)). The parts hold A itself (Scatter transposes), so
  // potrf gives A = L L^H with L column-major and Gather's plain transpose writes L: no
  // conjugation here.
  MATRIXD_CUDA_RETURN_IF_ERROR(
      grid.library().potrf_buffer_size(grid.handle(), CUBLAS_FILL_MODE_LOWER, n, a_->pointers(), 1,
                                       1, a_->desc(), a_->data_type(), &elements));
  const size_t size = a_->element_size();
  MATRIXD_ASSIGN_OR_RETURN(void** work, grid_->Workspace(elements, size));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid.devices()[0]));
  int info = 0;
  const cusolverStatus_t status = grid.library().potrf(
      grid.handle(), CUBLAS_FILL_MODE_LOWER, n, a_->pointers(), 1, 1, a_->desc(), a_->data_type(),
      work, grid_->workspace_elements(size), &info);
  MATRIXD_RETURN_IF_ERROR(grid_->Synchronize());
  // cusolverMgPotrf fails a matrix that is not positive definite with a status, not always with
  // info > 0 (seen on 2 H100s: a negative leading minor of order 101 of n = 130): the call's
  // arguments were checked above, so such a failure is the matrix's.
  if (status == CUSOLVER_STATUS_EXECUTION_FAILED || status == CUSOLVER_STATUS_INTERNAL_ERROR) {
    return absl::FailedPreconditionError(absl::StrCat(
        "matrix is not positive definite (", cuda::ToStatus(status, "cusolverMgPotrf").message(),
        "; cusolverMg does not report the order of the failing leading minor: factorize with "
        "devices = 1 to have it)"));
  }
  MATRIXD_CUDA_RETURN_IF_ERROR(status);
  if (info < 0) {
    return absl::InternalError(absl::StrCat("cusolverMgPotrf: argument ", -info, " is wrong"));
  }
  return info;
}

absl::Status CusolverMgCholesky::GatherFactor(void* out) { return a_->Gather(out, true); }

absl::Status CusolverMgCholesky::Solve(CusolverMgMatrix& b) {
  if (b.dtype() != a_->dtype()) {
    return absl::InvalidArgumentError(absl::StrCat("CusolverMgCholesky::Solve: b is ",
                                                   DTypeName(b.dtype()), ", want ",
                                                   DTypeName(a_->dtype())));
  }
  const CusolverMgGrid& grid = *grid_;
  const int n = static_cast<int>(n_);
  const int nrhs = static_cast<int>(b.cols());
  int64_t elements = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid.devices()[0]));
  MATRIXD_CUDA_RETURN_IF_ERROR(grid.library().potrs_buffer_size(
      grid.handle(), CUBLAS_FILL_MODE_LOWER, n, nrhs, a_->pointers(), 1, 1, a_->desc(),
      b.pointers(), 1, 1, b.desc(), a_->data_type(), &elements));
  const size_t size = a_->element_size();
  MATRIXD_ASSIGN_OR_RETURN(void** work, grid_->Workspace(elements, size));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid.devices()[0]));
  int info = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(grid.library().potrs(
      grid.handle(), CUBLAS_FILL_MODE_LOWER, n, nrhs, a_->pointers(), 1, 1, a_->desc(),
      b.pointers(), 1, 1, b.desc(), a_->data_type(), work, grid_->workspace_elements(size), &info));
  MATRIXD_RETURN_IF_ERROR(grid_->Synchronize());
  if (info < 0) {
    return absl::InternalError(absl::StrCat("cusolverMgPotrs: argument ", -info, " is wrong"));
  }
  return absl::OkStatus();
}

}  // namespace matrixd::multi_gpu
