// The exact integer determinant of an INT64 matrix: det mod enough word-size primes to cover
// Hadamard's bound, then Chinese remaindering (core/cpu/multimodular.h).
#ifndef MATRIXD_CORE_CPU_EXACT_DETERMINANT_H_
#define MATRIXD_CORE_CPU_EXACT_DETERMINANT_H_

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "core/cpu/progress_range.h"
#include "core/exact_certificate.h"
#include "core/operations.h"
#include "core/scaled_number.h"

namespace matrixd::cpu {

// The exact determinant is computed only while primes * n^3 stays below this (a few seconds of
// elimination on one core); above it the caller leaves DeterminantResult::exact empty.
inline constexpr double kExactDeterminantBudget = 1e10;

// How many primes of LargePrimes() recover det(A) for A n x n row-major: Hadamard's bound
// |det A| <= prod_i ||row_i||_2, summed as log2 in long double. 0 when a row is zero (det = 0).
// REQUIRES: a.size() == n * n, n >= 1.
int HadamardPrimeCount(std::span<const int64_t> a, int64_t n);

// log2 of Hadamard's bound prod_i ||row_i||_2 >= |det A|; -infinity when a row is zero.
// REQUIRES: a.size() == n * n, n >= 1.
double HadamardBoundBits(std::span<const int64_t> a, int64_t n);

struct ExactDeterminant {
  std::string decimal;
  ScaledNumber rounded;  // the same integer to double precision (truncated to 53 bits)
  ExactCertificate certificate;
};

// det(A) from det mod the first `primes` primes of LargePrimes(), each on up to `threads` threads.
// Adds its work to stats. Returns CANCELLED when `progress` is cancelled.
// REQUIRES: a.size() == n * n, n >= 1, primes >= HadamardPrimeCount(a, n), primes >= 1,
// threads >= 1.
absl::StatusOr<ExactDeterminant> ExactIntegerDeterminant(std::span<const int64_t> a, int64_t n,
                                                         int primes, int threads,
                                                         const ProgressRange& progress,
                                                         ComputeStats* stats);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_EXACT_DETERMINANT_H_
