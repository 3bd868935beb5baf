// The exact integer determinant of an INT64 matrix on the GPU: det A mod many random primes of
// 24 bits (one DGEMM per trailing update, core/cuda/modular_lu.h), factored together in batches,
// Chinese remaindering on the host after each batch (core/cpu/multimodular.h), and an early stop
// once the reconstruction stays the same over further primes. The certificate then says so, with
// the probability of a wrong answer (docs/accuracy.md); without the early stop the primes cover
// Hadamard's bound and the answer is certain.
#ifndef MATRIXD_CORE_CUDA_EXACT_DETERMINANT_H_
#define MATRIXD_CORE_CUDA_EXACT_DETERMINANT_H_

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/statusor.h"
#include "core/accuracy.h"
#include "core/cuda/device_context.h"
#include "core/cuda/exact_primes.h"
#include "core/exact_certificate.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "core/scaled_number.h"

namespace matrixd::cuda {

// The GPU's own budget: the exact determinant is computed when primes * n^3 <= this, primes
// counted as the 24-bit primes that cover Hadamard's bound (issue 13's n = 1000, 20-bit entries:
// ~1100 primes, 1.1e12). Set from the expected rate of the batched LU on an H100 (a few seconds at
// the limit; docs/accuracy.md); the CPU backend keeps cpu::kExactDeterminantBudget.
inline constexpr double kCudaExactDeterminantBudget = 1e14;

// The primes' range [2^23, 2^24), the number of primes in it (a sieve counts them in the tests),
// and how many bits each contributes at least.
inline constexpr uint64_t kExactPrimeLow = uint64_t{1} << 23;
inline constexpr uint64_t kExactPrimeHigh = uint64_t{1} << 24;
inline constexpr double kExactPrimePool = 513708.0;
inline constexpr double kExactPrimeMinBits = 23.0;

// The early stop confirms a value over at least this many bits of further primes, and over
// enough of them that one confirmation is wrong with probability at most 2^-kEarlyStopSecurity.
inline constexpr double kEarlyStopMinBits = 64.0;
inline constexpr double kEarlyStopSecurity = 64.0;

struct ExactPlan {
  double bound_bits = 0.0;  // log2 of Hadamard's bound; -infinity for a zero row
  int primes = 0;           // 24-bit primes that cover it (0 for a zero row)
  bool affordable = false;  // primes * n^3 <= kCudaExactDeterminantBudget
  // log2 |det A| from a floating-point determinant that can be trusted to a few bits
  // (UseFloatingPointEstimate), NaN when there is none. It only decides where the batches end
  // (the first check is placed where the early stop can pass), never the value or its certificate.
  double estimate_bits = std::numeric_limits<double>::quiet_NaN();
};

// The plan for A under `options` (its hadamard_bound_bits when set, else A's bound).
// REQUIRES: a square INT64 in host memory, n >= 1.
ExactPlan PlanExactDeterminant(const MatrixView& a, const DeterminantOptions& options = {});

// Sets plan->estimate_bits to log2 |det| when the floating-point determinant `det` of A has a
// relative error bound of at most kTrustedEstimateError (from its `accuracy`), and leaves it NaN
// otherwise (a singular or ill-conditioned A, whose determinant may be far smaller than the
// rounding suggests).
inline constexpr double kTrustedEstimateError = 1e-6;
void UseFloatingPointEstimate(const ScaledNumber& det, const Accuracy& accuracy, ExactPlan* plan);

// The device bytes ExactDeterminant takes at most for an n x n matrix under `plan` (0 when not
// affordable): the uploaded entries, its largest batch of primes (at most 8 GiB of residue
// matrices; a batch also takes at most half of what the context's limit leaves free, and shrinks
// rather than fails when an allocation is refused) and the trailing products' workspace.
uint64_t ExactDeterminantDeviceBytes(int64_t n, const ExactPlan& plan);

struct ExactValue {
  std::string decimal;
  ExactCertificate certificate;
};

// det(A) over Z, modulo the primes `source` hands out (core/cuda/exact_primes.h). Reports progress
// from `progress_from` to 1 on `control`; adds its work and the device phases
// (core/cuda/modular_lu.h) to `stats`. CANCELLED when `control` is cancelled.
// REQUIRES: a square INT64 in host memory or on the context's device (then read in place),
// plan = PlanExactDeterminant(a's host bytes) with plan.primes >= 1; `source` fresh (none taken).
absl::StatusOr<ExactValue> ExactDeterminant(const MatrixView& a, const ExactPlan& plan,
                                            ExactPrimes& source, DeviceContext& context,
                                            JobControl* control, double progress_from,
                                            ComputeStats* stats);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_EXACT_DETERMINANT_H_
