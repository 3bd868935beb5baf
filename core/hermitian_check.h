// Whether a matrix (or each matrix of a batch) is symmetric, or Hermitian when complex, to within
// rounding: Cholesky reads one triangle only, so an input that is not would silently give the
// factor of a different matrix.
#ifndef MATRIXD_CORE_HERMITIAN_CHECK_H_
#define MATRIXD_CORE_HERMITIAN_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/matrix.h"

namespace matrixd {

// REQUIRES: a floating dtype; each of the `batch_count` (0 = one matrix) stacked matrices square.
// OK when |a[i][j] - conj(a[j][i])| <= 16 eps |a|_max for every pair (and |Im a[i][i]| likewise)
// in each matrix, eps being the dtype's machine epsilon. Otherwise INVALID_ARGUMENT naming
// `field`, the matrix of the batch and the first offending pair with both values.
absl::Status RequireHermitian(const MatrixView& a, int64_t batch_count, absl::string_view field);

// RequireHermitian's tolerance for a matrix whose largest |a_ij| is `largest`: 16 eps largest, eps
// the machine epsilon of T's real type.
template <typename T>
double HermitianTolerance(double largest);

// The status RequireHermitian gives for the first offending pair (i, j), i <= j, with a[i][j] =
// upper and a[j][i] = lower, of matrix `k` of a batch (batch_count 0: one matrix), so that a check
// made elsewhere (on a device: core/cuda/hermitian_device_check.h) answers in the same words.
// T: float, double, std::complex<float> or std::complex<double>.
template <typename T>
absl::Status HermitianMismatchError(absl::string_view field, int64_t batch_count, int64_t k,
                                    int64_t i, int64_t j, T upper, T lower);

}  // namespace matrixd

#endif  // MATRIXD_CORE_HERMITIAN_CHECK_H_
