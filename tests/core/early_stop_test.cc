// The host pieces of the GPU's exact determinant with early stop (core/cuda/exact_determinant.h,
// core/cpu/multimodular.h): the random primes, the stability test on the residues, the
// probability bound, the prime pool's size and the plan's budget. No GPU needed.
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/accuracy.h"
#include "core/cpu/multimodular.h"
#include "core/cuda/balanced_residue.h"
#include "core/cuda/exact_determinant.h"
#include "core/cuda/modular_lu.h"
#include "core/matrix.h"
#include "core/modular_arithmetic.h"
#include "core/scaled_number.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

std::vector<uint64_t> ResiduesOf(int64_t x, const std::vector<uint64_t>& primes) {
  std::vector<uint64_t> residues;
  for (const uint64_t p : primes) residues.push_back(ReduceSigned(x, p));
  return residues;
}

TEST(EarlyStop, RandomPrimesAreDistinctPrimesInRange) {
  cpu::RandomPrimeSource source(cuda::kExactPrimeLow, cuda::kExactPrimeHigh, 7);
  std::set<uint64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const uint64_t p = source.Next();
    EXPECT_TRUE(IsPrime(p)) << p;
    EXPECT_GE(p, cuda::kExactPrimeLow);
    EXPECT_LT(p, cuda::kExactPrimeHigh);
    EXPECT_TRUE(seen.insert(p).second) << "drawn twice: " << p;
  }
  EXPECT_EQ(source.drawn(), 2000u);
}

TEST(EarlyStop, DifferentSeedsDrawDifferentPrimes) {
  cpu::RandomPrimeSource a(cuda::kExactPrimeLow, cuda::kExactPrimeHigh, 1);
  cpu::RandomPrimeSource b(cuda::kExactPrimeLow, cuda::kExactPrimeHigh, 2);
  int same = 0;
  for (int i = 0; i < 50; ++i) same += a.Next() == b.Next() ? 1 : 0;
  EXPECT_LT(same, 3);
}

TEST(EarlyStop, ReconstructionExtendsWhenTheValueIsStable) {
  cpu::RandomPrimeSource source(cuda::kExactPrimeLow, cuda::kExactPrimeHigh, 11);
  std::vector<uint64_t> primes;
  for (int i = 0; i < 10; ++i) primes.push_back(source.Next());
  for (const int64_t x : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{-123456789012345}}) {
    SCOPED_TRACE(x);
    const std::vector<uint64_t> residues = ResiduesOf(x, primes);
    // -123456789012345 needs 3 primes of 23 bits (47 bits and a sign).
    const size_t first = x == -123456789012345 ? 3 : 1;
    EXPECT_TRUE(cpu::ReconstructionExtends(residues, primes, first));
    EXPECT_EQ(cpu::ReconstructSigned(residues, primes), std::to_string(x));
  }
  // A value too large for the first two primes does not extend from them.
  const std::vector<uint64_t> residues = ResiduesOf(int64_t{1} << 60, primes);
  EXPECT_FALSE(cpu::ReconstructionExtends(residues, primes, 2));
  EXPECT_TRUE(cpu::ReconstructionExtends(residues, primes, 3));
  // One residue off: no longer stable.
  std::vector<uint64_t> off = ResiduesOf(5, primes);
  off.back() = (off.back() + 1) % primes.back();
  EXPECT_FALSE(cpu::ReconstructionExtends(off, primes, 4));
}

TEST(EarlyStop, AllDivideProbabilityIsTheHypergeometricBound) {
  // t = floor(230 / 23) = 10 candidates among 1000: C(10, 3) / C(1000, 3).
  const double expected = (10.0 * 9.0 * 8.0) / (1000.0 * 999.0 * 998.0);
  EXPECT_NEAR(cpu::AllDivideProbability(230.0, 23.0, 3, 1000.0), expected, 1e-18);
  // Fewer possible divisors than confirming primes: impossible.
  EXPECT_EQ(cpu::AllDivideProbability(40.0, 23.0, 2, 1000.0), 0.0);
  EXPECT_EQ(cpu::AllDivideProbability(0.0, 23.0, 1, 1000.0), 0.0);
}

TEST(EarlyStop, PrimePoolSizeMatchesASieve) {
  std::vector<bool> composite(cuda::kExactPrimeHigh, false);
  for (uint64_t i = 2; i * i < cuda::kExactPrimeHigh; ++i) {
    if (composite[i]) continue;
    for (uint64_t j = i * i; j < cuda::kExactPrimeHigh; j += i) composite[j] = true;
  }
  uint64_t count = 0;
  for (uint64_t i = cuda::kExactPrimeLow; i < cuda::kExactPrimeHigh; ++i) count += !composite[i];
  EXPECT_EQ(static_cast<double>(count), cuda::kExactPrimePool);
}

TEST(EarlyStop, ExactPrimesTakeOneProductPerTrailingUpdate) {
  // The batched LU's panels are 128 deep (modular_lu.cc's kPanelWidth = kMaxSolveDepth).
  EXPECT_EQ(cuda::ProductPieces(cuda::kExactPrimeHigh - 1, 128), 1);
  EXPECT_EQ(cuda::kExactPrimeHigh, cuda::kOnePieceModulusLimit);
  EXPECT_EQ(cuda::ProductPieces(uint64_t{1} << 26, 128), 2);
}

// The plan itself lives in the CUDA backend's library (core/cuda/exact_determinant.cc): only in
// builds that have it (a CPU-only build, e.g. without nvcc, links the tests above alone).
#ifdef MATRIXD_HAVE_CUDA
TEST(EarlyStop, PlanCountsPrimesAndKeepsTheGpuBudget) {
  // n = 1000, every entry 2^20 - 1: rows of norm ~2^20 * sqrt(1000) (~25,000 bits in all): about
  // 1100 primes of 23 bits, within the GPU's budget (1100 * 1e9 <= 1e14) but not the CPU's.
  const int64_t n = 1000;
  const Matrix a = Matrix::FromValues<int64_t>(
      n, n, std::vector<int64_t>(static_cast<size_t>(n * n), (int64_t{1} << 20) - 1));
  const cuda::ExactPlan plan = cuda::PlanExactDeterminant(a.view());
  const double bits = 1000.0 * (std::log2((1 << 20) - 1.0) + 0.5 * std::log2(1000.0));
  EXPECT_NEAR(plan.bound_bits, bits, 1e-6 * bits);
  EXPECT_EQ(plan.primes, static_cast<int>(std::ceil((bits + 2.01) / 23.0)));
  EXPECT_TRUE(plan.affordable);
  // The entries and the largest batch: at most 8 GiB of residue matrices, about 1040 of order
  // 1000 (nearly all the primes).
  const uint64_t bytes = cuda::ExactDeterminantDeviceBytes(n, plan);
  EXPECT_GT(bytes, uint64_t{8} * 1000 * n * n);
  EXPECT_LE(bytes, (uint64_t{8} << 30) + uint64_t{8} * n * n);

  const Matrix zero_row = Matrix::FromValues<int64_t>(3, 3, {1, 2, 3, 0, 0, 0, 4, 5, 6});
  const cuda::ExactPlan none = cuda::PlanExactDeterminant(zero_row.view());
  EXPECT_EQ(none.primes, 0);
  EXPECT_EQ(cuda::ExactDeterminantDeviceBytes(3, none), 0u);
}

TEST(EarlyStop, OnlyATrustedFloatingPointDeterminantPlacesTheFirstCheck) {
  const Matrix a = Matrix::FromValues<int64_t>(2, 2, {3, 1, 1, 2});
  // A well-conditioned 2^100 * 0.75: log2 = 100 - 0.415.
  cuda::ExactPlan plan = cuda::PlanExactDeterminant(a.view());
  EXPECT_TRUE(std::isnan(plan.estimate_bits));
  const ScaledNumber det = ScaledNumber::FromParts(0.75, 100);
  cuda::UseFloatingPointEstimate(det, DeterminantAccuracy(0.5, 2), &plan);
  EXPECT_NEAR(plan.estimate_bits, 100.0 + std::log2(0.75), 1e-12);
  // Ill-conditioned (the value may be rounding noise of a singular matrix), or zero: none.
  for (const auto& [value, rcond] : {std::pair{det, 1e-17}, std::pair{ScaledNumber::Zero(), 0.5}}) {
    cuda::ExactPlan untrusted = cuda::PlanExactDeterminant(a.view());
    cuda::UseFloatingPointEstimate(value, DeterminantAccuracy(rcond, 1000), &untrusted);
    EXPECT_TRUE(std::isnan(untrusted.estimate_bits));
  }
}
#endif  // MATRIXD_HAVE_CUDA

}  // namespace
}  // namespace matrixd
