// Estimated cost of a validated request in floating-point (or modular) operations: what the
// scheduler sorts jobs into its small and large lanes by. Order-of-magnitude estimates from the
// algorithms' operation counts, not promises.
#ifndef MATRIXD_SERVER_JOB_COST_H_
#define MATRIXD_SERVER_JOB_COST_H_

#include "server/request_validation.h"

namespace matrixd::server {

// n^3 for an n x n determinant (LU, condensation, mod p); times the number of 62-bit primes that
// the Hadamard bound (DeterminantOptions::hadamard_bound_bits, as validation set it) asks for when
// the exact determinant of an INT64 matrix is wanted.
double EstimatedFlops(const DeterminantInputs& inputs);
// LU m n min(m, n), QR twice that, Cholesky n^3 / 3, plus 2 m n k for a solve with k columns;
// for a batch, the sum over its matrices.
double EstimatedFlops(const FactorizeInputs& inputs);
// The solve's own count (SolveFlops in core/factorization.h): 2 n^2 per right-hand side for LU
// and Cholesky, 2 m n + n^2 for QR, plus 2 m n for a residual; complex 4x.
double EstimatedFlops(const SolveInputs& inputs);
// 2 m k n (the dense product, also as the bound of a block-sparse one); complex counts 4x.
double EstimatedFlops(const MultiplyInputs& inputs);
// 2 n 2^(n-1) (Glynn) or 2 n 2^n (Ryser); complex 4x; INT64 times the primes of the exact result.
double EstimatedFlops(const PermanentInputs& inputs);

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_JOB_COST_H_
