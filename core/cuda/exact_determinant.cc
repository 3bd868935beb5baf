#include "core/cuda/exact_determinant.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/exact_determinant.h"
#include "core/cpu/multimodular.h"
#include "core/cuda/modular_lu.h"
#include "core/cuda/modular_lu_kernels.h"
#include "core/hadamard_bound.h"
#include "core/status_macros.h"

namespace matrixd::cuda {
namespace {

// Without an estimate of |det| (ExactPlan::estimate_bits), the first round: enough primes to
// confirm a small determinant (±1, 0) at once, few enough to cost little when the determinant
// needs them all. Later rounds grow by kBatchGrowth, so that a determinant near Hadamard's bound
// runs in a few large batches.
constexpr int kFirstBatch = 16;
constexpr int kBatchGrowth = 4;
// A batch takes at most this much device memory (n = 1000: ~1040 primes with the fused products,
// all that 20-bit entries need), and at most half of what the context's limit leaves free.
constexpr uint64_t kMaxBatchBytes = uint64_t{8} << 30;
// The primes cover the bound once log2 of their product, less the sign's bit, exceeds bound_bits
// by this much: room for the rounding of the two sums of logarithms.
constexpr double kCoverMarginBits = 0.01;
// With an estimate, the first round's primes less its confirming ones cover the estimate by this
// many bits: a value up to 2^16 times larger than the estimate still passes the first check.
constexpr double kEstimateSlackBits = 16.0;
// Confirming primes a round aimed at the estimate may add at most after its primes are counted:
// the pool it plans with is this much smaller than the check's can be.
constexpr int kConfirmingReserve = 64;

int BatchCapacity(int64_t n) {
  const uint64_t per_prime = ModularLuBatchBytesPerPrime(n, kExactPrimeHigh - 1);
  return static_cast<int>(
      std::clamp<uint64_t>(kMaxBatchBytes / per_prime, 1, static_cast<uint64_t>(kMaxResidueBatch)));
}

// How many of the last primes must confirm a value (see ExactDeterminant): at least
// kEarlyStopMinBits of them, and enough that a wrong value passes with probability at most
// 2^-kEarlyStopSecurity. `value_bits` bounds log2 |det - value|; `used` primes have residues and
// the confirming ones are drawn from `pool` primes. 0 when `used` is too few to leave a value to
// confirm.
int ConfirmingPrimes(double value_bits, size_t used, double pool) {
  const double target = std::exp2(-kEarlyStopSecurity);
  for (int m = 1; static_cast<size_t>(m) < used; ++m) {
    if (m * kExactPrimeMinBits >= kEarlyStopMinBits &&
        cpu::AllDivideProbability(value_bits, kExactPrimeMinBits, m, pool) <= target) {
      return m;
    }
  }
  return 0;
}

}  // namespace

ExactPlan PlanExactDeterminant(const MatrixView& a, const DeterminantOptions& options) {
  const int64_t n = a.rows;
  ExactPlan plan;
  plan.bound_bits = HadamardBoundBits(a, options);
  if (std::isinf(plan.bound_bits)) return plan;
  // Each prime exceeds 2^23; the product must exceed 2 * 2^bound_bits (the sign), with the margin.
  plan.primes = std::max(1, static_cast<int>(std::ceil((plan.bound_bits + 2.0 + kCoverMarginBits) /
                                                       kExactPrimeMinBits)));
  const double cube = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  plan.affordable = plan.primes * cube <= kCudaExactDeterminantBudget;
  return plan;
}

void UseFloatingPointEstimate(const ScaledNumber& det, const Accuracy& accuracy, ExactPlan* plan) {
  if (det.is_zero() || !(accuracy.relative_error_bound <= kTrustedEstimateError)) return;
  plan->estimate_bits = det.log_abs() / std::numbers::ln2;
}

uint64_t ExactDeterminantDeviceBytes(int64_t n, const ExactPlan& plan) {
  if (!plan.affordable || plan.primes < 1) return 0;
  const uint64_t batch = static_cast<uint64_t>(std::min(plan.primes, BatchCapacity(n)));
  return static_cast<uint64_t>(n) * static_cast<uint64_t>(n) * sizeof(int64_t) +
         batch * ModularLuBatchBytesPerPrime(n, kExactPrimeHigh - 1);
}

// The primes are drawn at random from [2^23, 2^24) (`source`, core/cuda/exact_primes.h) and
// factored in rounds, each in as few device batches as fit. After a round, with N primes drawn and
// the last m of them "confirming": if the integer x reconstructed from the first N - m primes also
// has the residues of the last m, x is the answer (early stop). Were x != det, the non-zero integer
// det - x (below H + M/2 <= 2^v, H Hadamard's bound and M the product of the first N - m primes)
// would be divisible by each of the m confirming primes; drawn uniformly from the primes not drawn
// before, independently of A and of x (where a round ends is decided by A and the primes before
// them only), they all divide it with probability at most C(t, m) / C(pool, m), t = floor(v / 23)
// (cpu::AllDivideProbability). The certificate's error_probability sums this over every check
// made (a union bound over the rounds). Once the primes cover H the answer is certain.
//
// Where the rounds end: with a trusted estimate of log2 |det| (a well-conditioned A: a random
// matrix), the first round is all the primes the early stop needs (those whose product covers
// the estimate, then the confirming ones), so that n = 1000 runs in two device batches and one
// check instead of four of each; without one (a singular or structured A, whose determinant may be
// tiny), the rounds are 16, 64, 256, ... primes, each at most one device batch, with a check after
// each, and so also after a first round whose estimate was wrong.
absl::StatusOr<ExactValue> ExactDeterminant(const MatrixView& a, const ExactPlan& plan,
                                            ExactPrimes& source, DeviceContext& context,
                                            JobControl* control, double progress_from,
                                            ComputeStats* stats) {
  const int64_t n = a.rows;
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(int64_t);
  std::optional<DeviceBuffer> uploaded;
  const int64_t* entries = a.As<int64_t>().data();
  if (!a.on_device()) {
    MATRIXD_ASSIGN_OR_RETURN(uploaded, context.Allocate(bytes));
    MATRIXD_RETURN_IF_ERROR(context.Upload(entries, *uploaded, bytes));
    stats->bytes_moved += bytes;
    entries = uploaded->as<int64_t>();
  }

  std::vector<uint64_t> primes;    // factored, in the order drawn
  std::vector<uint64_t> residues;  // det mod each of them
  std::vector<uint64_t> planned;   // drawn for the round, not yet factored
  double covered_bits = -1.0;      // log2(product of primes and planned) - 1
  const auto covers_bound = [&] { return covered_bits > plan.bound_bits + kCoverMarginBits; };
  // Draws until `count` primes are drawn in all or their bits exceed `bits`, never past the bound.
  const auto draw = [&](size_t count, double bits) {
    while (!covers_bound() && primes.size() + planned.size() < count && covered_bits <= bits) {
      planned.push_back(source.Next());
      covered_bits += std::log2(static_cast<double>(planned.back()));
    }
  };
  constexpr size_t kAny = std::numeric_limits<size_t>::max();
  double error_probability = 0.0;
  int capacity = BatchCapacity(n);
  int batch = kFirstBatch;
  bool aiming = !std::isnan(plan.estimate_bits);
  while (true) {
    // The round's primes.
    int aimed_confirming = 0;
    if (aiming) {
      draw(kAny, plan.estimate_bits + kEstimateSlackBits);
      // Its confirming primes, counted for a pool smaller than any the check can see (a smaller
      // pool never needs fewer), so that the check confirms with at most these.
      aimed_confirming = ConfirmingPrimes(
          plan.bound_bits + kCoverMarginBits + 1.0, kAny,
          kExactPrimePool - static_cast<double>(source.taken() + kConfirmingReserve));
      draw(primes.size() + planned.size() + static_cast<size_t>(aimed_confirming), kAny);
    } else {
      draw(primes.size() + static_cast<size_t>(std::min(batch, capacity)), kAny);
    }

    // Factored in equal device batches of at most `capacity` primes, each also within half the
    // memory the context's limit leaves free (other jobs share the device).
    while (!planned.empty()) {
      if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
      const size_t batches =
          (planned.size() + static_cast<size_t>(capacity) - 1) / static_cast<size_t>(capacity);
      const MemoryStatistics memory = context.memory_statistics();
      const uint64_t free_bytes = context.memory_limit() > memory.current_bytes
                                      ? context.memory_limit() - memory.current_bytes
                                      : 0;
      const uint64_t per_prime = ModularLuBatchBytesPerPrime(n, kExactPrimeHigh - 1);
      const size_t fits = static_cast<size_t>(std::max<uint64_t>(1, free_bytes / 2 / per_prime));
      const size_t count = std::min((planned.size() + batches - 1) / batches, fits);
      const std::span<const uint64_t> group(planned.data(), count);
      absl::StatusOr<std::vector<uint64_t>> batch_residues =
          BatchedModularLuDeterminants(entries, n, group, context, /*control=*/nullptr, stats);
      if (absl::IsResourceExhausted(batch_residues.status()) && count > 1) {
        capacity = std::max(1, static_cast<int>(count / 2));  // smaller batches from here on
        continue;
      }
      if (!batch_residues.ok()) {
        return absl::Status(
            batch_residues.status().code(),
            absl::StrCat("exact determinant, primes ", primes.size() + 1, " to ",
                         primes.size() + count, ": ", batch_residues.status().message()));
      }
      primes.insert(primes.end(), group.begin(), group.end());
      residues.insert(residues.end(), batch_residues->begin(), batch_residues->end());
      planned.erase(planned.begin(), planned.begin() + static_cast<std::ptrdiff_t>(count));
      ReportProgress(control, progress_from + (1.0 - progress_from) *
                                                  std::min(1.0, static_cast<double>(primes.size()) /
                                                                    plan.primes));
    }
    if (covers_bound()) break;  // certain

    const double value_bits = std::max(plan.bound_bits, covered_bits) + 1.0;
    // The confirming primes were drawn from the pool less every prime drawn before them: counting
    // out every prime drawn so far errs on the safe side.
    const double pool = kExactPrimePool - static_cast<double>(source.taken());
    const int confirming = ConfirmingPrimes(value_bits, primes.size(), pool);
    // An aimed round is checked only with at most the confirming primes it planned: more would
    // take primes whose sizes decided where it ended (never so with kConfirmingReserve).
    if (confirming > 0 && (!aiming || confirming <= aimed_confirming)) {
      error_probability +=
          cpu::AllDivideProbability(value_bits, kExactPrimeMinBits, confirming, pool);
      const size_t count = primes.size() - static_cast<size_t>(confirming);
      if (std::optional<std::string> decimal = cpu::ReconstructIfExtends(residues, primes, count)) {
        ExactValue value{std::move(*decimal),
                         MultimodularCertificate(
                             "multimodular: batched LU mod random 24-bit primes on the GPU, CRT, "
                             "early stop",
                             std::move(primes), std::move(residues), plan.bound_bits)};
        value.certificate.early_stop = true;
        value.certificate.error_probability = error_probability;
        return value;
      }
    }
    if (aiming) {
      aiming = false;  // the estimate was off: the rounds without one from here
    } else {
      batch = std::min(batch * kBatchGrowth, kMaxResidueBatch);
    }
  }
  std::string decimal = cpu::ReconstructSigned(residues, primes);
  return ExactValue{
      std::move(decimal),
      MultimodularCertificate("multimodular: batched LU mod random 24-bit primes on the GPU, CRT",
                              std::move(primes), std::move(residues), plan.bound_bits)};
}

}  // namespace matrixd::cuda
