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

// How many primes of LargePrimes() recover a determinant of magnitude at most 2^bound_bits
// (Hadamard's bound, core/hadamard_bound.h). 0 for -infinity (a zero row: det = 0).
int PrimeCountForBound(double bound_bits);

struct ExactDeterminant {
  std::string decimal;
  ScaledNumber rounded;  // the same integer to double precision (truncated to 53 bits)
  ExactCertificate certificate;
};

// det(A) from det mod the first `primes` primes of LargePrimes(), each on up to `threads` threads.
// Adds its work to stats. Returns CANCELLED when `progress` is cancelled.
// `bound_bits` is A's Hadamard bound (HadamardBoundBits), which the certificate records.
// REQUIRES: a.size() == n * n, n >= 1, primes >= PrimeCountForBound(bound_bits), primes >= 1,
// threads >= 1.
absl::StatusOr<ExactDeterminant> ExactIntegerDeterminant(std::span<const int64_t> a, int64_t n,
                                                         int primes, double bound_bits, int threads,
                                                         const ProgressRange& progress,
                                                         ComputeStats* stats);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_EXACT_DETERMINANT_H_
