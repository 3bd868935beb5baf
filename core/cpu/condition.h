// Condition estimates on the CPU backend from the factors a factorization left: the block
// estimator of core/condition_estimate.h (2 vectors at once), each block solve a blocked
// substitution (threaded OpenBLAS ?gemv on the off-diagonal block columns, plain loops on the
// small diagonal blocks), in place of LAPACK's ?gecon / ?pocon / ?trcon, whose solves (dlatrs) take
// one vector at a time on one core while the factorization uses them all.
#ifndef MATRIXD_CORE_CPU_CONDITION_H_
#define MATRIXD_CORE_CPU_CONDITION_H_

#include <complex>
#include <cstdint>

#include "absl/status/statusor.h"
#include "core/condition_estimate.h"

namespace matrixd::cpu {

// How an n x n array is laid out: element (i, j) at a[i * ld + j] or a[i + j * ld].
enum class Storage { kRowMajor, kColumnMajor };

// What a factorization left in the array, and so the A whose condition is estimated:
enum class Factors {
  kLu,        // getrf's packed unit lower L and upper U with P A = L U (P is not needed: it
              // permutes A^-1's columns, which leaves ||A^-1||_1 alone)
  kCholesky,  // the lower triangle L of A = L L^H (the upper one is not read)
  kUpper,     // A is the upper triangle itself (QR's R; the lower one is not read)
};

// 1 / (||A||_1 ||A^-1||_1) estimated as EstimateReciprocalCondition (core/condition_estimate.h):
// in [0, 1], 0 when one_norm is 0 or not finite or a solve met a zero pivot or overflowed.
// one_norm = ||A||_1, computed by the caller (before the factorization overwrote A). The solves
// run in T's precision, the estimator's arithmetic in double. `solves`, when given, receives the
// block solves done (each with `columns` right-hand sides, 2 by default, reading the factors
// once). T is float, double, std::complex<float> or std::complex<double>. REQUIRES: n >= 1,
// ld >= n, 1 <= columns <= kMaxEstimateColumns.
template <typename T>
absl::StatusOr<double> ReciprocalCondition(Factors factors, int64_t n, const T* a, int64_t ld,
                                           Storage storage, double one_norm, int* solves = nullptr,
                                           int columns = kEstimateColumns);

// ||R||_1 of the upper triangle of the n x n array (as ?lantr '1', 'U', 'N').
template <typename T>
double UpperTriangleOneNorm(int64_t n, const T* a, int64_t ld, Storage storage);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_CONDITION_H_
