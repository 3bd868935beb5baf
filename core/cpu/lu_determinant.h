// det over the reals / complex numbers from an LU factorization with partial pivoting (LAPACK getrf
// on block columns, BLAS trsm/gemm for the trailing updates, so that cancellation is checked
// between blocks): det = sign(P) * prod diag(U), accumulated without overflow or underflow.
#ifndef MATRIXD_CORE_CPU_LU_DETERMINANT_H_
#define MATRIXD_CORE_CPU_LU_DETERMINANT_H_

#include <complex>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cpu/progress_range.h"
#include "core/operations.h"
#include "core/scaled_number.h"

namespace matrixd::cpu {

// det(A) and the reciprocal infinity-norm condition estimate of A (the block estimator on the
// factors, core/cpu/condition.h; 0 when A is exactly singular).
struct LuDeterminantResult {
  ScaledNumber det;
  double rcond = 0.0;
};

// det(A), A n x n row-major in `a`, which is used as the work space. Adds its work to stats->flops
// and stats->bytes_moved, and the kernel records "lu" (the elimination) and "condition_estimate".
// Returns CANCELLED when `progress` is cancelled between block columns, OUT_OF_RANGE when element
// growth carried a pivot past the double range. REQUIRES: a.size() == n * n, 1 <= n < 2^31, finite
// entries.
absl::StatusOr<LuDeterminantResult> LuDeterminant(std::vector<double> a, int64_t n,
                                                  const ProgressRange& progress,
                                                  ComputeStats* stats);
absl::StatusOr<LuDeterminantResult> LuDeterminant(std::vector<std::complex<double>> a, int64_t n,
                                                  const ProgressRange& progress,
                                                  ComputeStats* stats);

// The reciprocal 1-norm condition estimate of the column-major n x n matrix whose packed LU factors
// are `lu` (L and U of P A = L U, as getrf leaves them, LAPACK's or cuSOLVER's) and whose 1-norm
// is `norm`: ?gecon's estimate up to order 64 (core/cpu/small_lu_condition.h), the block estimator
// (ReciprocalCondition, core/cpu/condition.h) beyond; the estimate LuDeterminant makes.
double LuReciprocalCondition(int64_t n, const double* lu, double norm);
double LuReciprocalCondition(int64_t n, const std::complex<double>* lu, double norm);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_LU_DETERMINANT_H_
