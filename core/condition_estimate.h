// Condition estimates from any factorization that can solve: Hager and Higham's 1-norm estimator
// (LAPACK ?lacn2; Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., Alg. 15.4 and
// sec. 15.3), driven through a callback that applies A^-1 or A^-H to a vector. Backend-neutral:
// the CPU backend's callback is a LAPACK/BLAS solve, the CUDA backend's a cuSOLVER solve on the
// device factors.
#ifndef MATRIXD_CORE_CONDITION_ESTIMATE_H_
#define MATRIXD_CORE_CONDITION_ESTIMATE_H_

#include <complex>
#include <cstdint>
#include <span>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace matrixd {

// x := A^-1 x (adjoint false) or A^-H x (adjoint true; A^-T for real T), x of length n, in place.
// A failure status stops the estimate and is returned by it. T is double or std::complex<double>.
template <typename T>
using InverseApply = absl::FunctionRef<absl::Status(bool adjoint, std::span<T> x)>;

// An estimate of ||A^-1||_1 for n x n A, from at most 11 applications of `apply` (typically 4 or
// 5). Never above the true norm by more than rounding; below it by a small factor on all but
// contrived matrices (Higham, Table 15.1). Returns +inf or NaN when a solve overflowed or divided
// by a zero pivot. REQUIRES: n >= 1.
template <typename T>
absl::StatusOr<double> EstimateInverseOneNorm(int64_t n, InverseApply<T> apply);

// 1 / (||A||_1 ||A^-1||_1) estimated as above, in [0, 1], with one_norm = ||A||_1 computed by the
// caller before the factorization overwrote A. The vectors handed to `apply` are scaled by a power
// of two near one_norm, so that the solves overflow only when the condition number itself exceeds
// the double range. Returns 0 when one_norm is 0 or not finite, or when the estimate of ||A^-1||_1
// is not finite (a zero pivot or a solve that overflowed): singular to working precision.
template <typename T>
absl::StatusOr<double> EstimateReciprocalCondition(int64_t n, double one_norm,
                                                   InverseApply<T> apply);

extern template absl::StatusOr<double> EstimateInverseOneNorm<double>(int64_t,
                                                                      InverseApply<double>);
extern template absl::StatusOr<double> EstimateInverseOneNorm<std::complex<double>>(
    int64_t, InverseApply<std::complex<double>>);
extern template absl::StatusOr<double> EstimateReciprocalCondition<double>(int64_t, double,
                                                                           InverseApply<double>);
extern template absl::StatusOr<double> EstimateReciprocalCondition<std::complex<double>>(
    int64_t, double, InverseApply<std::complex<double>>);

}  // namespace matrixd

#endif  // MATRIXD_CORE_CONDITION_ESTIMATE_H_
