// Slow, simple client-side reference computations that matrixctl uses to check the server's
// answers independently: long double or exact modular arithmetic, textbook algorithms. Matrices
// are row-major vectors of complex<double>, as ToComplex128Values returns them.
#ifndef MATRIXD_CLIENT_REFERENCE_MATH_H_
#define MATRIXD_CLIENT_REFERENCE_MATH_H_

#include <complex>
#include <cstdint>
#include <vector>

namespace matrixd {

using ComplexValues = std::vector<std::complex<double>>;

// ||A X - B||_F / ||B||_F (just ||A X - B||_F when B is zero), accumulated in long double.
// REQUIRES: a is m x n, x is n x k, b is m x k.
double RelativeResidual(const ComplexValues& a, int64_t m, int64_t n, const ComplexValues& x,
                        int64_t k, const ComplexValues& b);

// det(A) of an n x n matrix as log|det| and det / |det|, by LU with partial pivoting in long
// double. A singular matrix (an exactly zero pivot) gives log_abs = -inf and phase 0.
struct ReferenceDeterminant {
  long double log_abs;
  std::complex<long double> phase;
};
ReferenceDeterminant DeterminantReference(const ComplexValues& a, int64_t n);

// det(A) mod p by Gaussian elimination over Z/p, entries reduced into [0, p) first.
// REQUIRES: p prime, 1 < p < 2^63; a is n x n.
uint64_t DeterminantModP(const std::vector<int64_t>& a, int64_t n, uint64_t p);

// The natural log of det(H_n) for the n x n Hilbert matrix, from the closed form
// det(H_n) = c_n^4 / c_{2n} with c_n = prod_{i=1}^{n-1} i!.
long double HilbertLogDeterminant(int64_t n);

// per(A) of an n x n matrix by Ryser's formula with Gray-code updates, in long double.
// REQUIRES: 0 <= n <= 30 (it takes O(2^n n) time).
std::complex<long double> PermanentReference(const ComplexValues& a, int64_t n);

// Entry (i, j) of op(A) op(B) in long double, op the plain transpose when asked. `a` is stored
// a_rows x a_cols and `b` b_rows x b_cols before op. REQUIRES: shapes agree.
std::complex<double> ProductEntry(const ComplexValues& a, int64_t a_rows, int64_t a_cols,
                                  bool transpose_a, const ComplexValues& b, int64_t b_rows,
                                  int64_t b_cols, bool transpose_b, int64_t i, int64_t j);

// How well the factors reproduce A, as ||A - factors||_F / ||A||_F:
// LU: A[permutation[i], :] = (L U)[i, :] with L unit lower and U upper, packed in `lu` (m x n);
// Cholesky: A = L L^H with L lower (n x n); QR: A = Q R, Q m x k, R k x n, k = min(m, n).
double LuReconstructionError(const ComplexValues& a, int64_t m, int64_t n, const ComplexValues& lu,
                             const std::vector<int64_t>& permutation);
double CholeskyReconstructionError(const ComplexValues& a, int64_t n, const ComplexValues& l);
double QrReconstructionError(const ComplexValues& a, int64_t m, int64_t n, const ComplexValues& q,
                             const ComplexValues& r);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_REFERENCE_MATH_H_
