// How far a floating-point result can be trusted: the condition estimate of the factorized matrix
// and the relative error bound derived from it, shared by every backend.
#ifndef MATRIXD_CORE_ACCURACY_H_
#define MATRIXD_CORE_ACCURACY_H_

#include <cstdint>

namespace matrixd {

// The unit roundoff of IEEE double (2^-53).
inline constexpr double kDoubleRoundoff = 0x1p-53;

struct Accuracy {
  // Reciprocal condition estimate in [0, 1] (LAPACK ?gecon of the factors); 0 for a singular
  // matrix.
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

}  // namespace matrixd

#endif  // MATRIXD_CORE_ACCURACY_H_
