// LU with partial pivoting of one n x n matrix (float32, float64, complex64 or complex128; the
// determinant and Generate float64 only) over several GPUs of this process by
// NVIDIA's cusolverMg (cusolverMgGetrf on a CusolverMgMatrix: 1-D column block-cyclic over the
// GPUs, blocks of `block` columns, all rows on every GPU, the layout of multi_gpu_lu.h), and what
// follows from the factors: the determinant (log|U(k,k)| summed and negative pivots counted on
// each GPU, the row swaps counted from the pivot vector, pivot_counts.h), the permutation, the
// packed factors gathered row-major, and solves by cusolverMgGetrs. The determinant is a
// yardstick for MultiGpuLu (matrixd_lu_bench); Factorize over several GPUs runs on the rest
// (multi_gpu_factorize.h).
#ifndef MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_LU_H_
#define MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_LU_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/block_cyclic_kernels.h"
#include "core/matrix.h"
#include "core/multi_gpu/cusolvermg_grid.h"
#include "core/multi_gpu/cusolvermg_matrix.h"
#include "core/multi_gpu/device_allocation.h"
#include "core/multi_gpu/pivot_counts.h"

namespace matrixd::multi_gpu {

class CusolverMgLu {
 public:
  // Loads cusolverMg, selects `devices` (distinct CUDA ordinals), enables peer access, and
  // allocates each GPU's part of a `dtype` matrix, pivots and workspace (and, with `staging`, the
  // buffers Load and GatherFactors need). UNAVAILABLE when the library cannot be loaded;
  // INVALID_ARGUMENT for no devices, n < 1 or n >= 2^31, block < 1, a dtype that is not
  // floating; RESOURCE_EXHAUSTED when a part does not fit; INTERNAL for CUDA and cuSOLVER errors.
  static absl::StatusOr<std::unique_ptr<CusolverMgLu>> Create(std::vector<int> devices, int64_t n,
                                                              int64_t block, bool staging = false,
                                                              DType dtype = DType::kFloat64);
  CusolverMgLu(const CusolverMgLu&) = delete;
  CusolverMgLu& operator=(const CusolverMgLu&) = delete;

  int gpus() const { return grid_->gpus(); }
  CusolverMgGrid& grid() { return *grid_; }
  const cuda::BlockCyclicPart& part(int g) const { return a_->part(g); }
  // REQUIRES: float64.
  double* matrix(int g) const { return static_cast<double*>(a_->data(g)); }

  // Makes `matrix` from `seed` in place on every GPU and waits for it. FAILED_PRECONDITION unless
  // float64.
  absl::Status Generate(cuda::GeneratedMatrix matrix, uint64_t seed);
  // Copies the row-major n x n `a` (of the dtype made with; host or device memory) in as A
  // itself, so that Factor gives P A = L U. REQUIRES: made with staging.
  absl::Status Load(const MatrixView& a);
  // Factors in place; returns when done. INTERNAL for a library error or a negative info; a zero
  // pivot is no error.
  absl::Status Factor();
  // The determinant of the last factorisation (sign 0 and -inf when singular). INTERNAL when the
  // pivots fit none of pivot_counts.h's readings; FAILED_PRECONDITION unless float64.
  absl::StatusOr<DistributedDeterminant> Determinant();
  // The 0-based permutation of the last factorisation: A[p[i], :] = (L U)[i, :]. INTERNAL when the
  // pivots fit none of pivot_permutation.h's readings.
  absl::StatusOr<std::vector<int64_t>> Permutation();
  // Writes the packed factors (unit lower L below the diagonal, U on and above) row-major into
  // `out` (n * n elements of host memory). REQUIRES: made with staging.
  absl::Status GatherFactors(void* out);
  // Overwrites b (n x nrhs on the same grid) with X, A X = b, from the last factorisation.
  // INTERNAL for a library error.
  absl::Status Solve(CusolverMgMatrix& b);

  // The matrix factored in place (after Factor: the packed factors).
  CusolverMgMatrix& factors() { return *a_; }
  // Device memory it holds on GPU g of its grid (its matrix, the pivots; the grid's workspace
  // apart).
  uint64_t device_bytes(int g) const;

 private:
  CusolverMgLu() = default;
  absl::Status RequireFloat64(const char* what) const;
  // Each GPU's pivot entries, as int64.
  absl::StatusOr<std::vector<std::vector<int64_t>>> PivotParts() const;

  // Declared first, so destroyed last: the matrices below are on its grid.
  std::unique_ptr<CusolverMgGrid> grid_;
  int64_t n_ = 0;
  int64_t block_ = 0;
  std::optional<CusolverMgMatrix> a_;
  std::vector<DeviceAllocation<int>> pivots_;  // n entries each, room for either reading
  std::vector<DeviceAllocation<double>> summary_;
  std::vector<int*> pivot_pointers_;
  int64_t work_elements_ = 0;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_LU_H_
