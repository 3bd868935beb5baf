#include "core/multi_gpu/cusolvermg_matrix.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"
#include "core/multi_gpu/block_cyclic_part.h"
#include "core/multi_gpu/operand_source.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

// cusolverMg's name for a floating dtype. REQUIRES: IsFloating(dtype).
cudaDataType DataTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return CUDA_R_32F;
    case DType::kComplex64:
      return CUDA_C_32F;
    case DType::kComplex128:
      return CUDA_C_64F;
    default:
      return CUDA_R_64F;
  }
}

}  // namespace

absl::StatusOr<CusolverMgMatrix> CusolverMgMatrix::Create(const CusolverMgGrid& grid, int64_t rows,
                                                          int64_t cols, DType dtype, int64_t block,
                                                          bool staging) {
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (rows < 1 || cols < 1 || rows >= kIntMax || cols >= kIntMax || block < 1 ||
      !IsFloating(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CusolverMgMatrix: ", rows, "x", cols, " ", DTypeName(dtype), " block ", block,
                     " (want 1 <= rows, cols < 2^31 - 1, block >= 1 and a floating dtype)"));
  }
  CusolverMgMatrix self;
  self.grid_ = &grid;
  self.rows_ = rows;
  self.cols_ = cols;
  self.block_ = std::min(block, cols);
  self.dtype_ = dtype;
  self.data_type_ = DataTypeOf(dtype);
  self.element_size_ = ElementSize(dtype);
  MATRIXD_CUDA_RETURN_IF_ERROR(grid.library().create_matrix_desc(
      &self.desc_, rows, cols, rows, self.block_, self.data_type_, grid.grid()));
  const distributed::BlockCyclicLayout layout{
      .rows = rows, .cols = cols, .block = self.block_, .grid = {.rows = 1, .cols = grid.gpus()}};
  for (int g = 0; g < grid.gpus(); ++g) {
    const int device = grid.devices()[g];
    self.parts_.push_back(PartOf(layout, g));
    MATRIXD_ASSIGN_OR_RETURN(auto data,
                             DeviceAllocation<std::byte>::Allocate(
                                 device, PartElements(self.parts_[g]) * self.element_size_));
    self.pointers_.push_back(data.get());
    self.data_.push_back(std::move(data));
    if (!staging) continue;
    MATRIXD_ASSIGN_OR_RETURN(
        auto buffer, DeviceAllocation<std::byte>::Allocate(
                         device, static_cast<size_t>(rows * self.block_) * self.element_size_));
    self.staging_.push_back(std::move(buffer));
    MATRIXD_ASSIGN_OR_RETURN(cuda::CudaStream stream, cuda::CudaStream::Create());
    self.streams_.push_back(std::move(stream));
  }
  return self;
}

CusolverMgMatrix::CusolverMgMatrix(CusolverMgMatrix&& other) noexcept
    : grid_(other.grid_),
      rows_(other.rows_),
      cols_(other.cols_),
      block_(other.block_),
      dtype_(other.dtype_),
      data_type_(other.data_type_),
      element_size_(other.element_size_),
      parts_(std::move(other.parts_)),
      data_(std::move(other.data_)),
      staging_(std::move(other.staging_)),
      streams_(std::move(other.streams_)),
      pointers_(std::move(other.pointers_)),
      desc_(std::exchange(other.desc_, nullptr)) {}

CusolverMgMatrix::~CusolverMgMatrix() {
  if (desc_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(grid_->library().destroy_matrix_desc(desc_));
}

uint64_t CusolverMgMatrix::BytesPerGpu(int64_t rows, int64_t cols, int64_t block, int gpus,
                                       size_t element_size) {
  const auto b = static_cast<uint64_t>(std::min(block, cols));
  const uint64_t blocks = (static_cast<uint64_t>(cols) + b - 1) / b;
  const uint64_t blocks_per_gpu = (blocks + static_cast<uint64_t>(gpus) - 1) / gpus;
  // The part and one block of staging.
  return (blocks_per_gpu + 1) * b * static_cast<uint64_t>(rows) * element_size;
}

int64_t CusolverMgMatrix::Width(int64_t global_block) const {
  return std::min(block_, cols_ - global_block * block_);
}

std::byte* CusolverMgMatrix::BlockStart(int64_t b) const {
  const int gpus = grid_->gpus();
  const int g = static_cast<int>(b % gpus);
  return data_[g].get() + static_cast<size_t>((b / gpus) * block_ * parts_[g].ld) * element_size_;
}

absl::Status CusolverMgMatrix::Scatter(const MatrixView& a) {
  if (a.dtype != dtype_ || a.rows != rows_ || a.cols != cols_) {
    return absl::InvalidArgumentError(absl::StrCat("CusolverMgMatrix::Scatter: want a ", rows_, "x",
                                                   cols_, " ", DTypeName(dtype_), " matrix, got ",
                                                   a.rows, "x", a.cols, " ", DTypeName(a.dtype)));
  }
  if (staging_.empty()) return absl::FailedPreconditionError("CusolverMgMatrix: no staging");
  MATRIXD_ASSIGN_OR_RETURN(const OperandSource source, OperandSource::Of(a));
  const auto* elements = static_cast<const std::byte*>(a.data);
  const size_t size = element_size_;
  const int gpus = grid_->gpus();
  const int64_t blocks = (cols_ + block_ - 1) / block_;
  for (int64_t b = 0; b < blocks; ++b) {
    const int g = static_cast<int>(b % gpus);
    const int64_t w = Width(b);
    const int device = grid_->devices()[g];
    const cudaStream_t own = streams_[g].get();
    // Block b of A's columns, rows x w row-major: w elements from each row.
    MATRIXD_ASSIGN_OR_RETURN(cudaStream_t copy, source.StreamFor(device, own));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(staging_[g].get(), w * size,
                                                   elements + b * block_ * size, cols_ * size,
                                                   w * size, rows_, cudaMemcpyDefault, copy));
    // A copy pushed from another GPU is not ordered with this GPU's stream.
    MATRIXD_RETURN_IF_ERROR(source.Synchronize());
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    // The staging, row-major rows x w, is column-major w x rows: its transpose is the block's
    // columns in column-major order.
    MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchTranspose(staging_[g].get(), w, rows_, w,
                                                       BlockStart(b), parts_[g].ld, size, own));
    // The next block's copy into this staging must not overtake the transpose.
    if (source.device() >= 0) MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(own));
  }
  for (int g = 0; g < gpus; ++g) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid_->devices()[g]));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(streams_[g].get()));
  }
  return absl::OkStatus();
}

absl::Status CusolverMgMatrix::Gather(void* out, bool lower_only) {
  return GatherRows(0, rows_, out, lower_only);
}

absl::Status CusolverMgMatrix::GatherRows(int64_t row0, int64_t count, void* out, bool lower_only) {
  if (staging_.empty()) return absl::FailedPreconditionError("CusolverMgMatrix: no staging");
  if (row0 < 0 || count < 0 || row0 + count > rows_) {
    return absl::InvalidArgumentError(absl::StrCat("CusolverMgMatrix::GatherRows: rows [", row0,
                                                   ", ", row0 + count, ") of ", rows_));
  }
  if (count == 0) return absl::OkStatus();
  // The parts were last written by cusolverMg's own streams.
  MATRIXD_RETURN_IF_ERROR(grid_->Synchronize());
  const int gpus = grid_->gpus();
  const int64_t blocks = (cols_ + block_ - 1) / block_;
  const size_t size = element_size_;
  auto* destination = static_cast<std::byte*>(out);
  for (int64_t b = 0; b < blocks; ++b) {
    const int g = static_cast<int>(b % gpus);
    const int64_t w = Width(b);
    const cudaStream_t own = streams_[g].get();
    std::byte* staging = staging_[g].get();
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid_->devices()[g]));
    // Column-major count x w (leading dimension ld) to column-major w x count, which is row-major
    // count x w.
    MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchTranspose(BlockStart(b) + row0 * size, count, w,
                                                       parts_[g].ld, staging, w, size, own));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(destination + b * block_ * size, cols_ * size,
                                                   staging, w * size, w * size, count,
                                                   cudaMemcpyDeviceToHost, own));
  }
  for (int g = 0; g < gpus; ++g) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid_->devices()[g]));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(streams_[g].get()));
  }
  if (lower_only) {
    // Row r keeps columns [0, r]: what cusolverMg left above the diagonal is A's, not L's.
    for (int64_t i = 0; i < count; ++i) {
      const int64_t first_zero = std::min(row0 + i + 1, cols_);
      std::memset(destination + static_cast<size_t>(i * cols_ + first_zero) * size, 0,
                  static_cast<size_t>(cols_ - first_zero) * size);
    }
  }
  return absl::OkStatus();
}

absl::Status CusolverMgMatrix::Diagonal(void* out) {
  MATRIXD_RETURN_IF_ERROR(grid_->Synchronize());
  const int gpus = grid_->gpus();
  const int64_t blocks = (std::min(rows_, cols_) + block_ - 1) / block_;
  const size_t size = element_size_;
  auto* destination = static_cast<std::byte*>(out);
  for (int64_t b = 0; b < blocks; ++b) {
    const int g = static_cast<int>(b % gpus);
    const int64_t first = b * block_;
    const int64_t w = std::min(Width(b), rows_ - first);
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid_->devices()[g]));
    // A[first + j, first + j] is entry first + j of the block's column j: ld + 1 elements apart.
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(
        destination + first * size, size, BlockStart(b) + first * size, (parts_[g].ld + 1) * size,
        size, w, cudaMemcpyDeviceToHost, streams_[g].get()));
  }
  for (int g = 0; g < gpus; ++g) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(grid_->devices()[g]));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(streams_[g].get()));
  }
  return absl::OkStatus();
}

uint64_t CusolverMgMatrix::device_bytes(int g) const {
  const auto index = static_cast<size_t>(g);
  return data_[index].bytes() + (index < staging_.size() ? staging_[index].bytes() : 0);
}

}  // namespace matrixd::multi_gpu
