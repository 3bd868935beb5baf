// The reciprocal 1-norm condition estimate of a small matrix from getrf's factors, as LAPACK's
// ?gecon makes it (its estimator ?lacn2, the same steps and stopping rule), with the triangular
// solves as plain loops on the calling thread. ?gecon solves through ?latrs -> ?trsv, and
// OpenBLAS (0.3.21, Debian 12) hands every ?trsv a buffer from blas_memory_alloc under one
// process-wide mutex: a server computing many small determinants at once on its request threads
// waited there (the off-CPU profile in docs/benchmarks.md). The loops do not scale against
// overflow as ?latrs does: when a solve leaves the double range the answer is nullopt, and the
// caller takes ?gecon itself.
#ifndef MATRIXD_CORE_CPU_SMALL_LU_CONDITION_H_
#define MATRIXD_CORE_CPU_SMALL_LU_CONDITION_H_

#include <complex>
#include <cstdint>
#include <optional>

namespace matrixd::cpu {

// Orders up to this take SmallLuReciprocalCondition in the LU determinant (beyond, OpenBLAS's
// solves cost far more than a buffer's lock, and the block estimator's threaded ones pay).
inline constexpr int64_t kSmallConditionMaxOrder = 64;

// 1 / (||A||_1 ||A^-1||_1) estimated from the packed factors `lu` of P A = L U (column-major,
// n x n, leading dimension n; unit lower L, upper U with no zero on its diagonal) and one_norm =
// ||A||_1 > 0, finite. nullopt when a solve overflowed. `solves`, when given, receives the solves
// done, each with both triangles. REQUIRES: 1 <= n <= kSmallConditionMaxOrder.
std::optional<double> SmallLuReciprocalCondition(int64_t n, const double* lu, double one_norm,
                                                 int* solves = nullptr);
std::optional<double> SmallLuReciprocalCondition(int64_t n, const std::complex<double>* lu,
                                                 double one_norm, int* solves = nullptr);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_SMALL_LU_CONDITION_H_
