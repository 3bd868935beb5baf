// Cholesky factorization A = L L^H of one Hermitian (symmetric when real) positive definite n x n
// matrix (float32, float64, complex64 or complex128) over several GPUs of this process by NVIDIA's
// cusolverMg (cusolverMgPotrf on the lower triangle of a CusolverMgMatrix, the layout of
// cusolvermg_lu.h), L gathered row-major, and solves by cusolverMgPotrs. What Factorize over
// several GPUs runs for CHOLESKY (multi_gpu_factorize.h).
#ifndef MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_CHOLESKY_H_
#define MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_CHOLESKY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/matrix.h"
#include "core/multi_gpu/cusolvermg_grid.h"
#include "core/multi_gpu/cusolvermg_matrix.h"

namespace matrixd::multi_gpu {

class CusolverMgCholesky {
 public:
  // As CusolverMgLu::Create with staging (cusolvermg_lu.h).
  static absl::StatusOr<std::unique_ptr<CusolverMgCholesky>> Create(std::vector<int> devices,
                                                                    int64_t n, int64_t block,
                                                                    DType dtype);
  CusolverMgCholesky(const CusolverMgCholesky&) = delete;
  CusolverMgCholesky& operator=(const CusolverMgCholesky&) = delete;

  CusolverMgGrid& grid() { return *grid_; }

  // Copies the row-major n x n `a` (of the dtype made with; host or device memory) in; only its
  // lower triangle is read by Factor.
  absl::Status Load(const MatrixView& a);
  // Factors in place and returns cusolverMg's info: 0, or k > 0 when the leading minor of order k
  // is not positive (A is not positive definite). INTERNAL for a library error or a negative info.
  absl::StatusOr<int> Factor();
  // Writes L (zeros above the diagonal) row-major into `out` (n * n elements of host memory).
  absl::Status GatherFactor(void* out);
  // Overwrites b (n x nrhs of the same dtype on the same grid) with X, A X = b. INVALID_ARGUMENT
  // for another dtype; INTERNAL for a library error.
  absl::Status Solve(CusolverMgMatrix& b);

  // The matrix factored in place (after Factor: L in its lower triangle, A's entries above).
  CusolverMgMatrix& factors() { return *a_; }
  // Device memory it holds on GPU g of its grid (the grid's workspace apart).
  uint64_t device_bytes(int g) const { return a_->device_bytes(g); }

 private:
  CusolverMgCholesky() = default;

  std::unique_ptr<CusolverMgGrid> grid_;  // first, so destroyed last
  int64_t n_ = 0;
  std::optional<CusolverMgMatrix> a_;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_CHOLESKY_H_
