// det(A) over Z by FLINT's fmpz_mat_det on one thread: the CPU reference the exact determinant
// table measures ours against. Present when the build found FLINT (MATRIXD_HAVE_FLINT; Debian
// libflint-dev); without it every call answers UNAVAILABLE.
#ifndef MATRIXD_TESTS_BENCH_FLINT_DETERMINANT_H_
#define MATRIXD_TESTS_BENCH_FLINT_DETERMINANT_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/matrix.h"

namespace matrixd::bench {

struct FlintDeterminant {
  std::string decimal;   // the exact determinant
  double seconds = 0.0;  // host clock around fmpz_mat_det alone, not the conversion before it
};

// Whether this build has FLINT.
bool FlintAvailable();

// "FLINT 2.9.0, threads: 1", or why there is no FLINT.
std::string FlintDescription();

// INVALID_ARGUMENT unless a is a non-empty square INT64 matrix; UNAVAILABLE in a build without
// FLINT.
absl::StatusOr<FlintDeterminant> FlintExactDeterminant(const MatrixView& a);

}  // namespace matrixd::bench

#endif  // MATRIXD_TESTS_BENCH_FLINT_DETERMINANT_H_
