#include "core/cuda/exact_determinant.h"

#include <algorithm>
#include <cmath>
#include <random>
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
#include "core/status_macros.h"

namespace matrixd::cuda {
namespace {

// The first batch: enough primes to confirm a small determinant (±1, 0) at once, few enough to
// cost little when the determinant needs them all. Later batches grow by kBatchGrowth, so that a
// determinant near Hadamard's bound (a random matrix) runs in a few large batches.
constexpr int kFirstBatch = 16;
constexpr int kBatchGrowth = 4;
// A batch takes at most this much device memory (n = 1000: ~1000 primes), and at most half of
// what the context's limit leaves free.
constexpr uint64_t kMaxBatchBytes = uint64_t{8} << 30;
// The primes cover the bound once log2 of their product, less the sign's bit, exceeds bound_bits
// by this much: room for the rounding of the two sums of logarithms.
constexpr double kCoverMarginBits = 0.01;

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

ExactPlan PlanExactDeterminant(const MatrixView& a) {
  const int64_t n = a.rows;
  ExactPlan plan;
  plan.bound_bits = cpu::HadamardBoundBits(a.As<int64_t>(), n);
  if (std::isinf(plan.bound_bits)) return plan;
  // Each prime exceeds 2^23; the product must exceed 2 * 2^bound_bits (the sign), with the margin.
  plan.primes = std::max(1, static_cast<int>(std::ceil((plan.bound_bits + 2.0 + kCoverMarginBits) /
                                                       kExactPrimeMinBits)));
  const double cube = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  plan.affordable = plan.primes * cube <= kCudaExactDeterminantBudget;
  return plan;
}

uint64_t ExactDeterminantDeviceBytes(int64_t n, const ExactPlan& plan) {
  if (!plan.affordable || plan.primes < 1) return 0;
  const uint64_t batch = static_cast<uint64_t>(std::min(plan.primes, BatchCapacity(n)));
  return static_cast<uint64_t>(n) * static_cast<uint64_t>(n) * sizeof(int64_t) +
         batch * ModularLuBatchBytesPerPrime(n, kExactPrimeHigh - 1);
}

// The primes are drawn at random from [2^23, 2^24) (cpu::RandomPrimeSource) and factored in
// batches. After each batch, with N primes drawn and the last m of them "confirming": if the
// integer x reconstructed from the first N - m primes also has the residues of the last m, x is
// the answer (early stop). Were x != det, the non-zero integer det - x (below H + M/2 <= 2^v, H
// Hadamard's bound and M the product of the first N - m primes) would be divisible by each of the
// m confirming primes; drawn uniformly from the primes not drawn before, independently of A and of
// x, they all divide it with probability at most C(t, m) / C(pool, m), t = floor(v / 23)
// (cpu::AllDivideProbability). The certificate's error_probability sums this over every check
// made (a union bound over the batches). Once the primes cover H the answer is certain.
absl::StatusOr<ExactValue> ExactDeterminant(const MatrixView& a, const ExactPlan& plan,
                                            DeviceContext& context, JobControl* control,
                                            double progress_from, ComputeStats* stats) {
  const int64_t n = a.rows;
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(int64_t);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer entries, context.Allocate(bytes));
  MATRIXD_RETURN_IF_ERROR(context.Upload(a.As<int64_t>().data(), entries, bytes));
  stats->bytes_moved += bytes;

  cpu::RandomPrimeSource source(kExactPrimeLow, kExactPrimeHigh, std::random_device{}());
  std::vector<uint64_t> primes;
  std::vector<uint64_t> residues;
  double covered_bits = -1.0;  // log2(product of the primes) - 1
  double error_probability = 0.0;
  int capacity = BatchCapacity(n);
  int batch = std::min(kFirstBatch, plan.primes);
  while (true) {
    if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
    // Never more primes than cover the bound (at most plan.primes in all).
    std::vector<uint64_t> next;
    while (static_cast<int>(next.size()) < std::min(batch, capacity) &&
           covered_bits <= plan.bound_bits + kCoverMarginBits) {
      next.push_back(source.Next());
      covered_bits += std::log2(static_cast<double>(next.back()));
    }
    // Half the free memory at most: other jobs share the device.
    const MemoryStatistics memory = context.memory_statistics();
    const uint64_t free_bytes = context.memory_limit() > memory.current_bytes
                                    ? context.memory_limit() - memory.current_bytes
                                    : 0;
    const uint64_t per_prime = ModularLuBatchBytesPerPrime(n, kExactPrimeHigh - 1);
    const size_t fits = static_cast<size_t>(std::max<uint64_t>(1, free_bytes / 2 / per_prime));
    size_t done = 0;
    while (done < next.size()) {
      const size_t count = std::min(next.size() - done, fits);
      const std::span<const uint64_t> group(next.data() + done, count);
      absl::StatusOr<std::vector<uint64_t>> batch_residues = BatchedModularLuDeterminants(
          entries.as<int64_t>(), n, group, context, /*control=*/nullptr, stats);
      if (absl::IsResourceExhausted(batch_residues.status()) && count > 1) {
        capacity = std::max(1, static_cast<int>(count / 2));  // smaller batches from here on
        next.resize(done + count / 2);  // the rest return to the source's untried primes' pool
        continue;
      }
      if (!batch_residues.ok()) {
        return absl::Status(
            batch_residues.status().code(),
            absl::StrCat("exact determinant, primes ", primes.size() + done + 1, " to ",
                         primes.size() + done + count, ": ", batch_residues.status().message()));
      }
      primes.insert(primes.end(), group.begin(), group.end());
      residues.insert(residues.end(), batch_residues->begin(), batch_residues->end());
      done += count;
    }
    ReportProgress(control, progress_from + (1.0 - progress_from) *
                                                std::min(1.0, static_cast<double>(primes.size()) /
                                                                  plan.primes));
    covered_bits = -1.0;
    for (const uint64_t p : primes) covered_bits += std::log2(static_cast<double>(p));
    if (covered_bits > plan.bound_bits + kCoverMarginBits) break;  // certain

    const double value_bits = std::max(plan.bound_bits, covered_bits) + 1.0;
    // The confirming primes were drawn from the pool less every prime drawn before them: counting
    // out every prime drawn so far (those a smaller batch left unused too) errs on the safe side.
    const double pool = kExactPrimePool - static_cast<double>(source.drawn());
    const int confirming = ConfirmingPrimes(value_bits, primes.size(), pool);
    if (confirming > 0) {
      error_probability +=
          cpu::AllDivideProbability(value_bits, kExactPrimeMinBits, confirming, pool);
      const size_t count = primes.size() - static_cast<size_t>(confirming);
      if (cpu::ReconstructionExtends(residues, primes, count)) {
        std::vector<uint64_t> first_primes(primes.begin(), primes.begin() + count);
        std::vector<uint64_t> first_residues(residues.begin(), residues.begin() + count);
        ExactValue value{cpu::ReconstructSigned(first_residues, first_primes),
                         MultimodularCertificate(
                             "multimodular: batched LU mod random 24-bit primes on the GPU, CRT, "
                             "early stop",
                             std::move(primes), std::move(residues), plan.bound_bits)};
        value.certificate.early_stop = true;
        value.certificate.error_probability = error_probability;
        return value;
      }
    }
    batch = std::min(batch * kBatchGrowth, kMaxResidueBatch);
  }
  std::string decimal = cpu::ReconstructSigned(residues, primes);
  return ExactValue{
      std::move(decimal),
      MultimodularCertificate("multimodular: batched LU mod random 24-bit primes on the GPU, CRT",
                              std::move(primes), std::move(residues), plan.bound_bits)};
}

}  // namespace matrixd::cuda
