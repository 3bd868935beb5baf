// How far a floating-point result can be trusted: the condition estimate of the factorized matrix
// and the relative error bound derived from it, shared by every backend.
#ifndef MATRIXD_CORE_ACCURACY_H_
#define MATRIXD_CORE_ACCURACY_H_

#include <cstdint>

namespace matrixd {

// The unit roundoffs of IEEE double (2^-53) and single (2^-24) precision.
inline constexpr double kDoubleRoundoff = 0x1p-53;
inline constexpr double kFloatRoundoff = 0x1p-24;
// The unit roundoff of a real type, float or double (also of complex numbers made of it).
template <typename Real>
inline constexpr double kRoundoffOf = sizeof(Real) == sizeof(float) ? kFloatRoundoff
                                                                    : kDoubleRoundoff;

struct Accuracy {
  // Reciprocal condition estimate in [0, 1] (the block estimator of core/condition_estimate.h on
  // the factors); 0 for a singular matrix.
  double rcond = 0.0;
  // Estimated bound on |computed - exact| / |exact|; +inf when it is 1 or more (no digit sure).
  double relative_error_bound = 0.0;
  // -log10(relative_error_bound), clamped to [0, -log10(roundoff)].
  double meaningful_digits = 0.0;
  // Fewer than half of the working precision's digits are meaningful.
  bool ill_conditioned = false;
};

// The accuracy of det(A), A n x n, from an LU factorization with partial pivoting in arithmetic of
// unit roundoff `roundoff`: first order, |d det / det| = |tr(A^-1 dA)| <= n ||A^-1|| ||dA||, and
// LU's backward error ||dA|| ~ u ||A||, so the bound is n u kappa / (1 - n u kappa) with kappa = 1
// / rcond (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., sec. 14.6 and 9.3; the
// growth factor is taken as 1). REQUIRES: rcond in [0, 1], n >= 1.
Accuracy DeterminantAccuracy(double rcond, int64_t n, double roundoff = kDoubleRoundoff);

// The accuracy of a solve A x = b with a backward-stable factorization (LU with partial pivoting,
// Cholesky, Householder QR) of A, n x n, computed in arithmetic of unit roundoff `roundoff`: the
// solve is exact for some A + dA with ||dA|| <~ n u ||A|| (Higham, 2nd ed., Thm 9.4, 10.4, 19.5,
// the constant and growth factor taken as 1), so ||x^ - x|| / ||x|| <= n u kappa / (1 - n u kappa)
// with kappa = 1 / rcond (Thm 7.2 with db = 0). The same formula as DeterminantAccuracy: an
// estimate, not a proof. For least squares (QR of a tall A with a non-zero residual) the error
// can reach kappa^2 u (sec. 20.1): the bound is that of a consistent system.
// REQUIRES: rcond in [0, 1], n >= 1.
Accuracy FactorizationAccuracy(double rcond, int64_t n, double roundoff = kDoubleRoundoff);

// The accuracy of an exact integer determinant rounded to double: its only error is that
// rounding, whatever `rcond` (kept as computed) says about the matrix.
Accuracy ExactlyRoundedAccuracy(double rcond);

}  // namespace matrixd

#endif  // MATRIXD_CORE_ACCURACY_H_
