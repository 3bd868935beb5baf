// A float64 rows x cols matrix on the GPUs of a CusolverMgGrid as cusolverMg takes it: 1-D column
// block-cyclic (blocks of `block` columns, block k on GPU k mod R; every GPU holds all rows of its
// columns, column-major, leading dimension rows) with its cusolverMg descriptor. Scatter and
// Gather move it from and to a row-major matrix, transposing one block of columns at a time on
// the GPU that owns it (a row-major matrix read column-major is its transpose). Moved never
// copied; REQUIRES: the grid outlives it.
#ifndef MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_MATRIX_H_
#define MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_MATRIX_H_

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
  // Allocates each GPU's part (and, with `staging`, one block of columns to transpose through,
  // which Scatter and Gather need). INVALID_ARGUMENT for rows or cols outside [1, 2^31 - 1) or
  // block < 1; RESOURCE_EXHAUSTED when a part does not fit; INTERNAL for CUDA and cuSOLVER errors.
  static absl::StatusOr<CusolverMgMatrix> Create(const CusolverMgGrid& grid, int64_t rows,
                                                 int64_t cols, int64_t block, bool staging = true);
  CusolverMgMatrix(CusolverMgMatrix&& other) noexcept;
  CusolverMgMatrix& operator=(CusolverMgMatrix&&) = delete;
  CusolverMgMatrix(const CusolverMgMatrix&) = delete;
  CusolverMgMatrix& operator=(const CusolverMgMatrix&) = delete;
  ~CusolverMgMatrix();

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t block() const { return block_; }
  cudaLibMgMatrixDesc_t desc() const { return desc_; }
  // One pointer per GPU, as cusolverMg's array_d_A takes them.
  void** pointers() { return pointers_.data(); }
  const cuda::BlockCyclicPart& part(int g) const { return parts_[g]; }
  double* data(int g) const { return data_[g].get(); }

  // Copies the row-major float64 matrix `a` (rows x cols; host or device memory, read as
  // operand_source.h says) into the parts and waits for the copies. INVALID_ARGUMENT for another
  // shape or dtype; INTERNAL for CUDA errors.
  absl::Status Scatter(const MatrixView& a);
  // Writes the matrix row-major into `out` (rows * cols doubles of host memory) and waits; with
  // `lower_only`, the entries above the diagonal are written as zeros. INTERNAL for CUDA errors.
  absl::Status Gather(double* out, bool lower_only);

  // Bytes each GPU holds at most for a rows x cols matrix over `gpus` GPUs, staging included.
  static uint64_t BytesPerGpu(int64_t rows, int64_t cols, int64_t block, int gpus);

 private:
  CusolverMgMatrix() = default;
  int64_t Width(int64_t global_block) const;

  const CusolverMgGrid* grid_ = nullptr;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  int64_t block_ = 0;
  std::vector<cuda::BlockCyclicPart> parts_;
  std::vector<DeviceAllocation<double>> data_;
  std::vector<DeviceAllocation<double>> staging_;  // rows x min(block, cols), row-major
  std::vector<cuda::CudaStream> streams_;
  std::vector<void*> pointers_;
  cudaLibMgMatrixDesc_t desc_ = nullptr;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_MATRIX_H_
