// The exact integer determinant of one random INT64 matrix: our GPU backend (batched LU mod
// random 24-bit primes, CRT, early stop: core/cuda/exact_determinant.h) next to FLINT's
// fmpz_mat_det on one core, with the two values compared digit for digit.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/exact_determinant.h"
#include "core/cpu/multimodular.h"
#include "core/hadamard_bound.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"
#include "tests/bench/flint_determinant.h"

#ifdef MATRIXD_HAVE_CUDA
#include "core/cuda/modular_lu.h"
#endif

namespace matrixd::bench {
namespace {

// The median of `repeats` host-clock timings of `op`, in milliseconds.
template <typename Op>
double HostMilliseconds(int repeats, Op&& op) {
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    op();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  return Median(ms);
}

// The host's part of the GPU's exact determinant, timed here on the CPU: Hadamard's bound, drawing
// the random 24-bit primes that cover it, and the Chinese remaindering of the early stop's check
// and of the value. With the GPU's certificate, its primes and residues (the check then passes
// where the GPU's did); without, residues drawn at random (the check fails at its first
// confirming prime, the value is that of the random residues: the same work).
void PrintHostPart(const Matrix& a, const ExactCertificate* gpu, int repeats) {
  const int64_t n = a.rows();
  double bound_bits = 0.0;
  const double hadamard =
      HostMilliseconds(repeats, [&] { bound_bits = HadamardBoundBits(a.view().As<int64_t>(), n); });
  if (std::isinf(bound_bits)) return;
  std::vector<uint64_t> primes;
  const double draw = HostMilliseconds(repeats, [&] {
    cpu::RandomPrimeSource source(uint64_t{1} << 23, uint64_t{1} << 24, 7);
    primes.clear();
    for (double covered = -1.0; covered <= bound_bits;) {
      primes.push_back(source.Next());
      covered += std::log2(static_cast<double>(primes.back()));
    }
  });
  const size_t drawn = primes.size();
  std::vector<uint64_t> residues;
  if (gpu != nullptr && !gpu->primes.empty()) {
    primes = gpu->primes;
    residues = gpu->residues;
  } else {
    std::mt19937_64 rng(11);
    for (const uint64_t p : primes) residues.push_back(rng() % p);
  }
  // m = 8 confirming primes at n = 1000.
  const size_t count = primes.size() > 8 ? primes.size() - 8 : primes.size();
  const double check = HostMilliseconds(
      repeats, [&] { static_cast<void>(cpu::ReconstructIfExtends(residues, primes, count)); });
  const double value = HostMilliseconds(
      repeats, [&] { static_cast<void>(cpu::ReconstructSigned(residues, primes)); });
  std::printf(
      "  host part (CPU clock, median of %d): Hadamard bound %.3f ms, draw %zu primes %.3f ms, "
      "check of %zu + 8 primes (and its value) %.3f ms, value from all %zu %.3f ms%s\n",
      repeats, hadamard, drawn, draw, count, check, primes.size(), value,
      gpu != nullptr && !gpu->primes.empty() ? " (the GPU's primes and residues)"
                                             : " (random residues)");
}

// Sets how the GPU's modular LU forms its one-piece products ("fused" or "cublas", as
// Flags::exact_products) and returns the choice it replaced (a build without CUDA has no GPU rows:
// "fused", unchanged).
std::string UseProducts(const std::string& products) {
#ifdef MATRIXD_HAVE_CUDA
  cuda::ModularLuTuning tuning = cuda::GetModularLuTuning();
  const std::string before = tuning.fused_products ? "fused" : "cublas";
  tuning.fused_products = products == "fused";
  cuda::SetModularLuTuning(tuning);
  return before;
#else
  static_cast<void>(products);
  return "fused";
#endif
}

}  // namespace

void BenchExactDeterminant(const Flags& flags, Backend* gpu) {
  const bool flint = flags.flint && FlintAvailable();
  const int64_t bound = (int64_t{1} << flags.exact_bits) - 1;
  PrintHeader(
      "Exact determinant, int64: ours GPU vs FLINT fmpz_mat_det on one core",
      "n      products  digits   primes  early  ours GPU(s)  FLINT(s)   FLINT/GPU  values",
      {"ours GPU: backend call, method AUTO (upload, the floating-point LU, then the exact value: "
       "batched LU mod random 24-bit primes, CRT after each round, early stop once stable; the "
       "first round aimed at the floating-point estimate when it is trusted); "
       "median of --repeats after a warm-up; products: the modular LU's one-piece products by "
       "one fused kernel (fused), or cublasDgemmStridedBatched then the reduction (cublas), "
       "--exact_products",
       "primes: used by the last run; early: whether it stopped before Hadamard's bound (with its "
       "error probability)",
       "GPU phases: device time of the last run's residues, panels, trailing DGEMMs and "
       "reductions, over all batches",
       "host part: the host's share of the exact value (Hadamard's bound, drawing the primes, the "
       "CRT of the check and of the value), timed alone on this CPU",
       absl::StrCat("FLINT: fmpz_mat_set + fmpz_mat_det, ",
                    flint ? FlintDescription()
                          : "not run (" + (flags.flint ? FlintDescription() : "--no_flint") + ")",
                    ", one run, conversion not timed"),
       absl::StrCat("entries uniform in [-", bound, ", ", bound,
                    "]; target: FLINT/GPU >= 100 at n = 1000, 20-bit entries")});
  for (const int n : flags.exact_sizes) {
    const Matrix a = RandomInt64Matrix(n, bound, 700 + n);
    std::string flint_decimal;
    double flint_seconds = NAN;
    std::string flint_error;
    if (flint) {
      absl::StatusOr<FlintDeterminant> reference = FlintExactDeterminant(a.view());
      if (reference.ok()) {
        flint_decimal = reference->decimal;
        flint_seconds = reference->seconds;
      } else {
        flint_error = std::string(reference.status().ToString());
      }
    }
    const std::string products_setting = UseProducts("fused");  // the process's, restored below
    for (const std::string& products : flags.exact_products) {
      DeterminantResult last;
      Timing timing;
      if (gpu != nullptr) {
        UseProducts(products);
        timing = TimeRuns(1, flags.repeats, [&] {
          absl::StatusOr<DeterminantResult> result = gpu->Determinant(a.view(), {}, nullptr);
          if (result.ok()) last = *result;
          return result;
        });
      }
      std::string values = "- (nothing to compare)";
      if (!last.exact.empty() && !flint_decimal.empty()) {
        values = last.exact == flint_decimal ? "match" : "MISMATCH";
      } else if (gpu != nullptr && timing.error.empty() && last.exact.empty()) {
        values = "GPU gave no exact value (over its budget)";
      }
      const ExactCertificate c = last.certificate.value_or(ExactCertificate{});
      const std::string early =
          c.early_stop ? absl::StrCat("yes (", c.error_probability, ")") : std::string("no");
      const std::string digits =
          last.exact.empty()
              ? std::string("-")
              : std::to_string(last.exact.size() - (last.exact.starts_with("-") ? 1 : 0));
      std::printf("%-6d %-9s %-8s %-7zu %-6s %-12s %-10s %-10s %s\n", n, products.c_str(),
                  digits.c_str(), c.primes.size(), early.c_str(), Seconds(timing.seconds).c_str(),
                  Seconds(flint_seconds).c_str(), Ratio(flint_seconds, timing.seconds).c_str(),
                  values.c_str());
      if (!last.stats.kernels.empty()) {
        std::string phases;
        for (const KernelRecord& phase : last.stats.kernels) {
          absl::StrAppend(&phases, phases.empty() ? "" : ", ", phase.kernel, " ",
                          Seconds(phase.seconds));
        }
        std::printf("  GPU phases: %s\n", phases.c_str());
      }
      PrintHostPart(a, last.certificate.has_value() ? &*last.certificate : nullptr,
                    std::max(flags.repeats, 3));
      if (values == "MISMATCH") {
        std::printf("  GPU:   %s\n  FLINT: %s\n", last.exact.c_str(), flint_decimal.c_str());
      }
      if (!timing.error.empty()) std::printf("  GPU failed: %s\n", timing.error.c_str());
      if (!flint_error.empty()) std::printf("  FLINT failed: %s\n", flint_error.c_str());
    }
    UseProducts(products_setting);
  }
}

}  // namespace matrixd::bench
