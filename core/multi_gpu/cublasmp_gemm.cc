#include "core/multi_gpu/cublasmp_gemm.h"

#include <cublasmp.h>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/multi_gpu/block_cyclic_part.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

absl::Status CublasMpStatus(cublasMpStatus_t code, const char* call) {
  if (code == CUBLASMP_STATUS_SUCCESS) return absl::OkStatus();
  const std::string message = absl::StrCat(call, " failed: ", cublasMpGetStatusString(code));
  if (code == CUBLASMP_STATUS_ALLOCATION_FAILED) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}
#define MATRIXD_CUBLASMP_RETURN_IF_ERROR(expr) \
  MATRIXD_RETURN_IF_ERROR(CublasMpStatus((expr), #expr))

}  // namespace

absl::StatusOr<std::unique_ptr<CublasMpGemm>> CublasMpGemm::Create(NcclRank& rank,
                                                                   distributed::GridShape grid,
                                                                   int64_t m, int64_t n, int64_t k,
                                                                   int64_t block) {
  if (grid.rows < 1 || grid.cols < 1 || grid.size() != rank.ranks()) {
    return absl::InvalidArgumentError(absl::StrCat("CublasMpGemm: grid ", grid.rows, "x", grid.cols,
                                                   " for ", rank.ranks(), " ranks"));
  }
  if (m < 1 || n < 1 || k < 1 || block < 1) {
    return absl::InvalidArgumentError(absl::StrCat("CublasMpGemm: m=", m, " n=", n, " k=", k,
                                                   " block=", block, " (all must be positive)"));
  }
  std::unique_ptr<CublasMpGemm> self(new CublasMpGemm(rank));
  self->m_ = m;
  self->n_ = n;
  self->k_ = k;
  self->a_part_ = PartOf({.rows = m, .cols = k, .block = block, .grid = grid}, rank.rank());
  self->b_part_ = PartOf({.rows = k, .cols = n, .block = block, .grid = grid}, rank.rank());
  self->c_part_ = PartOf({.rows = m, .cols = n, .block = block, .grid = grid}, rank.rank());
  MATRIXD_ASSIGN_OR_RETURN(self->a_, DeviceArray<double>::Allocate(PartElements(self->a_part_)));
  MATRIXD_ASSIGN_OR_RETURN(self->b_, DeviceArray<double>::Allocate(PartElements(self->b_part_)));
  MATRIXD_ASSIGN_OR_RETURN(self->c_, DeviceArray<double>::Allocate(PartElements(self->c_part_)));

  MATRIXD_CUBLASMP_RETURN_IF_ERROR(cublasMpCreate(&self->handle_, rank.stream()));
  MATRIXD_CUBLASMP_RETURN_IF_ERROR(cublasMpGridCreate(
      grid.rows, grid.cols, CUBLASMP_GRID_LAYOUT_ROW_MAJOR, rank.comm(), &self->grid_));
  const auto describe = [&](const cuda::BlockCyclicPart& part, cublasMpMatrixDescriptor_t* desc) {
    return CublasMpStatus(
        cublasMpMatrixDescriptorCreate(part.rows, part.cols, part.block, part.block, 0, 0, part.ld,
                                       CUDA_R_64F, self->grid_, desc),
        "cublasMpMatrixDescriptorCreate");
  };
  MATRIXD_RETURN_IF_ERROR(describe(self->a_part_, &self->a_desc_));
  MATRIXD_RETURN_IF_ERROR(describe(self->b_part_, &self->b_desc_));
  MATRIXD_RETURN_IF_ERROR(describe(self->c_part_, &self->c_desc_));

  const double alpha = 1.0;
  const double beta = 0.0;
  size_t device_bytes = 0;
  size_t host_bytes = 0;
  MATRIXD_CUBLASMP_RETURN_IF_ERROR(
      cublasMpGemm_bufferSize(self->handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, self->a(),
                              1, 1, self->a_desc_, self->b(), 1, 1, self->b_desc_, &beta, self->c(),
                              1, 1, self->c_desc_, CUBLAS_COMPUTE_64F, &device_bytes, &host_bytes));
  MATRIXD_ASSIGN_OR_RETURN(self->device_work_, DeviceArray<unsigned char>::Allocate(device_bytes));
  self->host_work_.resize(host_bytes);
  return self;
}

CublasMpGemm::~CublasMpGemm() {
  // Queued products may still read the parts and the workspace.
  cudaStreamSynchronize(rank_.stream());
  if (c_desc_ != nullptr) cublasMpMatrixDescriptorDestroy(c_desc_);
  if (b_desc_ != nullptr) cublasMpMatrixDescriptorDestroy(b_desc_);
  if (a_desc_ != nullptr) cublasMpMatrixDescriptorDestroy(a_desc_);
  if (grid_ != nullptr) cublasMpGridDestroy(grid_);
  if (handle_ != nullptr) cublasMpDestroy(handle_);
}

absl::Status CublasMpGemm::Multiply() {
  const double alpha = 1.0;
  const double beta = 0.0;
  MATRIXD_CUBLASMP_RETURN_IF_ERROR(
      cublasMpGemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m_, n_, k_, &alpha, a(), 1, 1, a_desc_, b(),
                   1, 1, b_desc_, &beta, c(), 1, 1, c_desc_, CUBLAS_COMPUTE_64F, device_work_.get(),
                   device_work_.bytes(), host_work_.data(), host_work_.size()));
  return absl::OkStatus();
}

}  // namespace matrixd::multi_gpu
