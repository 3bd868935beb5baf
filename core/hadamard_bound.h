// Hadamard's bound on an integer determinant, |det A| <= prod_i ||row_i||_2: what sizes the primes
// of an exact (multimodular) determinant on either backend. Computed once per request by the
// server (DeterminantOptions::hadamard_bound_bits) and by a backend only when not given.
#ifndef MATRIXD_CORE_HADAMARD_BOUND_H_
#define MATRIXD_CORE_HADAMARD_BOUND_H_

#include <cstdint>
#include <span>

#include "core/operations.h"

namespace matrixd {

// log2 of Hadamard's bound of A n x n row-major, never below the exact value and above it by at
// most about n 2^-53 bits a row (double sums with a margin); -infinity when
// a row is zero (det = 0). REQUIRES: a.size() == n * n, n >= 1.
double HadamardBoundBits(std::span<const int64_t> a, int64_t n);

// options.hadamard_bound_bits when set, else HadamardBoundBits of `a`.
// REQUIRES: a square INT64 matrix in host memory, n >= 1.
double HadamardBoundBits(const MatrixView& a, const DeterminantOptions& options);

}  // namespace matrixd

#endif  // MATRIXD_CORE_HADAMARD_BOUND_H_
