// A rows x cols matrix of one floating dtype (float32, float64, complex64, complex128) on the GPUs
// of a CusolverMgGrid as cusolverMg takes it: 1-D column block-cyclic (blocks of `block` columns,
// block k on GPU k mod R; every GPU holds all rows of its columns, column-major, leading dimension
// rows) with its cusolverMg descriptor. Scatter and Gather move it from and to a row-major matrix,
// transposing one block of columns at a time on the GPU that owns it (a row-major matrix read
// column-major is its transpose; plain transposes, no conjugation: the parts hold A itself).
// Moved never copied; REQUIRES: the grid outlives it.
#ifndef MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_MATRIX_H_
#define MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_MATRIX_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/block_cyclic_kernels.h"
#include "core/cuda/cuda_stream.h"
#include "core/matrix.h"
#include "core/multi_gpu/cusolvermg_grid.h"
#include "core/multi_gpu/device_allocation.h"

namespace matrixd::multi_gpu {

class CusolverMgMatrix {
 public:
  // Allocates each GPU's part of a `dtype` matrix (and, with `staging`, one block of columns to
  // transpose through, which Scatter and Gather need). INVALID_ARGUMENT for rows or cols outside
  // [1, 2^31 - 1), block < 1 or a dtype that is not floating; RESOURCE_EXHAUSTED when a part does
  // not fit; INTERNAL for CUDA and cuSOLVER errors.
  static absl::StatusOr<CusolverMgMatrix> Create(const CusolverMgGrid& grid, int64_t rows,
                                                 int64_t cols, DType dtype, int64_t block,
                                                 bool staging = true);
  CusolverMgMatrix(CusolverMgMatrix&& other) noexcept;
  CusolverMgMatrix& operator=(CusolverMgMatrix&&) = delete;
  CusolverMgMatrix(const CusolverMgMatrix&) = delete;
  CusolverMgMatrix& operator=(const CusolverMgMatrix&) = delete;
  ~CusolverMgMatrix();

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t block() const { return block_; }
  DType dtype() const { return dtype_; }
  // The cudaDataType cusolverMg's routines take for this matrix (CUDA_R_32F ... CUDA_C_64F).
  cudaDataType data_type() const { return data_type_; }
  size_t element_size() const { return element_size_; }
  cudaLibMgMatrixDesc_t desc() const { return desc_; }
  // One pointer per GPU, as cusolverMg's array_d_A takes them.
  void** pointers() { return pointers_.data(); }
  const cuda::BlockCyclicPart& part(int g) const { return parts_[g]; }
  void* data(int g) const { return data_[g].get(); }

  // Copies the row-major matrix `a` (rows x cols of this dtype; host or device memory, read as
  // operand_source.h says) into the parts and waits for the copies. INVALID_ARGUMENT for another
  // shape or dtype; INTERNAL for CUDA errors.
  absl::Status Scatter(const MatrixView& a);
  // Writes the matrix row-major into `out` (rows * cols elements of host memory) and waits; with
  // `lower_only`, the entries above the diagonal are written as zeros. INTERNAL for CUDA errors.
  absl::Status Gather(void* out, bool lower_only);
  // Gather of rows [row0, row0 + count) only, into `out` (count * cols elements of host memory).
  // INVALID_ARGUMENT for rows outside the matrix.
  absl::Status GatherRows(int64_t row0, int64_t count, void* out, bool lower_only);
  // Writes A[j, j] for j < min(rows, cols) into `out` (host memory) and waits. INTERNAL for CUDA
  // errors.
  absl::Status Diagonal(void* out);
  // Device memory it holds on GPU g of its grid: its part and its staging.
  uint64_t device_bytes(int g) const;

  // Bytes each GPU holds at most for a rows x cols matrix of `element_size`-byte elements over
  // `gpus` GPUs, staging included.
  static uint64_t BytesPerGpu(int64_t rows, int64_t cols, int64_t block, int gpus,
                              size_t element_size);

 private:
  CusolverMgMatrix() = default;
  int64_t Width(int64_t global_block) const;
  // Where global column block b starts in its GPU's part.
  std::byte* BlockStart(int64_t b) const;

  const CusolverMgGrid* grid_ = nullptr;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  int64_t block_ = 0;
  DType dtype_ = DType::kFloat64;
  cudaDataType data_type_ = CUDA_R_64F;
  size_t element_size_ = sizeof(double);
  std::vector<cuda::BlockCyclicPart> parts_;
  std::vector<DeviceAllocation<std::byte>> data_;
  std::vector<DeviceAllocation<std::byte>> staging_;  // rows x min(block, cols), row-major
  std::vector<cuda::CudaStream> streams_;
  std::vector<void*> pointers_;
  cudaLibMgMatrixDesc_t desc_ = nullptr;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_MATRIX_H_
