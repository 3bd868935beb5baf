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

}  // namespace matrixd

#endif  // MATRIXD_CORE_HERMITIAN_CHECK_H_
