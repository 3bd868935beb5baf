// The contract every compute backend (core/cpu, core/cuda) fulfils. Inputs are validated by the
// caller (see core/validation.h); a backend still returns INVALID_ARGUMENT for an input it cannot
// handle, CANCELLED when `control` was cancelled, and never throws.
#ifndef MATRIXD_CORE_BACKEND_H_
#define MATRIXD_CORE_BACKEND_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd {

class Backend {
 public:
  virtual ~Backend() = default;

  // "cpu" or "cuda".
  virtual std::string_view name() const = 0;
  // Human-readable description of the device(s) used.
  virtual std::string device() const = 0;

  // det(A) over R/C, or over Z/p when options.modulus > 0.
  // REQUIRES: a is square and finite; INT64 when modulus > 0.
  virtual absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                        const DeterminantOptions& options,
                                                        JobControl* control) = 0;

  // LU, Cholesky (FAILED_PRECONDITION if not positive definite) or QR of a; solves A X = rhs
  // when rhs is not null (FAILED_PRECONDITION if A is singular).
  // REQUIRES: a floating (real or complex) and finite; square for CHOLESKY and for a solve;
  // rhs, if given, with a.rows rows and a's dtype.
  virtual absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, FactorizationKind kind,
                                                    const MatrixView* rhs,
                                                    JobControl* control) = 0;

  // C = op(A) op(B). REQUIRES: same dtype (floating or UINT32), inner dimensions agree.
  virtual absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                                  const MultiplyOptions& options,
                                                  JobControl* control) = 0;

  // per(A). REQUIRES: a square, finite, floating or INT64, within the configured size limit.
  virtual absl::StatusOr<PermanentResult> Permanent(const MatrixView& a,
                                                    const PermanentOptions& options,
                                                    JobControl* control) = 0;
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_BACKEND_H_
