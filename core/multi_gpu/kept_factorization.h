// A factorization over several GPUs left where cusolverMg computed it
// (core/device_factorization.h): LU's packed factors with its pivots, or Cholesky's L, in
// cusolverMg's 1-D column block-cyclic parts (cusolvermg_matrix.h), with the cusolverMg session
// (grid) that made them. Solve scatters B over the same GPUs, runs getrs (potrs) on the kept parts
// and gathers X into host memory; Read gathers the rows of the factor asked for. The grid's
// workspace is freed once the factorization is kept and after each solve, so that between solves it
// holds only what Parts() counts.
#ifndef MATRIXD_CORE_MULTI_GPU_KEPT_FACTORIZATION_H_
#define MATRIXD_CORE_MULTI_GPU_KEPT_FACTORIZATION_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/device_factorization.h"
#include "core/multi_gpu/cusolvermg_cholesky.h"
#include "core/multi_gpu/cusolvermg_lu.h"

namespace matrixd::multi_gpu {

// Keeps a factored `lu` (after CusolverMgLu::Factor; made with staging) or `cholesky` (after a
// Factor that returned 0). GPU g of its grid is the backend's device `device_indices[g]`.
// REQUIRES: device_indices has one entry per GPU of the grid. INTERNAL for CUDA errors.
absl::StatusOr<std::unique_ptr<DeviceFactorization>> KeepLu(std::unique_ptr<CusolverMgLu> lu,
                                                            std::vector<int> device_indices);
absl::StatusOr<std::unique_ptr<DeviceFactorization>> KeepCholesky(
    std::unique_ptr<CusolverMgCholesky> cholesky, std::vector<int> device_indices);

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_KEPT_FACTORIZATION_H_
