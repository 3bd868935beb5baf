// Cholesky factorization A = L L^T of one symmetric positive definite float64 n x n matrix over
// several GPUs of this process by NVIDIA's cusolverMg (cusolverMgPotrf on the lower triangle of a
// CusolverMgMatrix, the layout of cusolvermg_lu.h), L gathered row-major, and solves by
// cusolverMgPotrs. What Factorize over several GPUs runs for CHOLESKY (multi_gpu_factorize.h).
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
                                                                    int64_t n, int64_t block);
  CusolverMgCholesky(const CusolverMgCholesky&) = delete;
  CusolverMgCholesky& operator=(const CusolverMgCholesky&) = delete;

  CusolverMgGrid& grid() { return *grid_; }

  // Copies the row-major n x n float64 `a` (host or device memory) in; only its lower triangle
  // is read by Factor.
  absl::Status Load(const MatrixView& a);
  // Factors in place and returns cusolverMg's info: 0, or k > 0 when the leading minor of order k
  // is not positive (A is not positive definite). INTERNAL for a library error or a negative info.
  absl::StatusOr<int> Factor();
  // Writes L (zeros above the diagonal) row-major into `out` (n * n doubles of host memory).
  absl::Status GatherFactor(double* out);
  // Overwrites b (n x nrhs on the same grid) with X, A X = b. INTERNAL for a library error.
  absl::Status Solve(CusolverMgMatrix& b);

 private:
  CusolverMgCholesky() = default;

  std::unique_ptr<CusolverMgGrid> grid_;  // first, so destroyed last
  int64_t n_ = 0;
  std::optional<CusolverMgMatrix> a_;
};

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_CUSOLVERMG_CHOLESKY_H_
