// The CPU backend's blocked modular LU (core/cpu/modular_lu.h) against the unblocked elimination
// and against Bareiss' exact integer determinant: sizes around the panel width, primes on both
// sides of the float64 representation's limit, singular matrices, pivots found deep in a panel.
#include "core/cpu/modular_lu.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cpu/modular_elimination.h"
#include "core/cpu/modular_fields.h"
#include "core/job_control.h"
#include "core/modular_arithmetic.h"
#include "gtest/gtest.h"
#include "tests/core/bareiss_reference.h"

namespace matrixd {
namespace {

using cpu::BlockedModularDeterminant;
using cpu::ModularLuOptions;
using cpu::ProgressRange;
using cpu::UnblockedModularDeterminant;

constexpr int64_t kPanel = ModularLuOptions{}.panel_width;  // the production panel width
// A narrow panel whose halves still split once more before the column-by-column leaf.
constexpr int64_t kNarrowPanel = 40;

// The largest prime below `limit` and the smallest at or above it.
uint64_t PrimeBelow(uint64_t limit) {
  uint64_t p = limit - 1;
  while (!IsPrime(p)) --p;
  return p;
}
uint64_t PrimeFrom(uint64_t limit) {
  uint64_t p = limit;
  while (!IsPrime(p)) ++p;
  return p;
}

// 2, 3, 65521, both sides of the float64 products' split, 2^31 - 19, both sides of the float64
// limit and a prime near 2^62.
std::vector<uint64_t> Primes() {
  return {2,
          3,
          65521,
          PrimeBelow(cpu::kSplitOperandModulus),
          PrimeFrom(cpu::kSplitOperandModulus),
          2147483629,
          PrimeBelow(cpu::kBalancedDoubleModulusLimit),
          PrimeFrom(cpu::kBalancedDoubleModulusLimit),
          PrimeBelow(kModulusLimit)};
}

std::vector<uint64_t> RandomResidues(int64_t n, uint64_t p, std::mt19937_64& rng) {
  std::uniform_int_distribution<uint64_t> uniform(0, p - 1);
  std::vector<uint64_t> a(static_cast<size_t>(n * n));
  for (uint64_t& x : a) x = uniform(rng);
  return a;
}

std::vector<uint64_t> Residues(const std::vector<int64_t>& entries, uint64_t p) {
  std::vector<uint64_t> a(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) a[i] = ReduceSigned(entries[i], p);
  return a;
}

uint64_t Blocked(std::vector<uint64_t> a, int64_t n, uint64_t p, int64_t panel = kPanel,
                 int threads = 2) {
  ComputeStats stats;
  absl::StatusOr<uint64_t> det =
      BlockedModularDeterminant(std::move(a), n, p, {.panel_width = panel, .threads = threads},
                                ProgressRange(nullptr), &stats);
  EXPECT_TRUE(det.ok()) << det.status();
  return det.value_or(p);
}

uint64_t Unblocked(std::vector<uint64_t> a, int64_t n, uint64_t p) {
  ComputeStats stats;
  absl::StatusOr<uint64_t> det =
      UnblockedModularDeterminant(std::move(a), n, p, ProgressRange(nullptr), &stats);
  EXPECT_TRUE(det.ok()) << det.status();
  return det.value_or(p);
}

// Sizes around one, two and three panels of width b.
std::vector<int64_t> SizesAround(int64_t b) { return {1, 2, b - 1, b, b + 1, 2 * b + 3, 3 * b}; }

TEST(ModularLu, MatchesUnblockedEliminationAroundThePanelWidth) {
  std::mt19937_64 rng(31);
  for (const uint64_t p : Primes()) {
    for (const int64_t n : SizesAround(kPanel)) {
      SCOPED_TRACE(::testing::Message() << "p=" << p << " n=" << n);
      const std::vector<uint64_t> a = RandomResidues(n, p, rng);
      EXPECT_EQ(Blocked(a, n, p), Unblocked(a, n, p));
    }
  }
}

TEST(ModularLu, MatchesBareissWithNarrowPanels) {
  std::mt19937_64 rng(32);
  std::uniform_int_distribution<int64_t> entry(-9, 9);
  for (const uint64_t p : Primes()) {
    for (const int64_t n : SizesAround(kNarrowPanel)) {
      SCOPED_TRACE(::testing::Message() << "p=" << p << " n=" << n);
      std::vector<int64_t> a(static_cast<size_t>(n * n));
      for (int64_t& x : a) x = entry(rng);
      EXPECT_EQ(Blocked(Residues(a, p), n, p, kNarrowPanel),
                testing::BareissResidue(a, static_cast<int>(n), p));
    }
  }
}

TEST(ModularLu, ResultDoesNotDependOnTheThreadCount) {
  std::mt19937_64 rng(33);
  const int64_t n = 2 * kPanel + 3;
  for (const uint64_t p : {uint64_t{65521}, uint64_t{2147483629}}) {
    const std::vector<uint64_t> a = RandomResidues(n, p, rng);
    const uint64_t one_thread = Blocked(a, n, p, kPanel, 1);
    EXPECT_EQ(Blocked(a, n, p, kPanel, 3), one_thread);
    EXPECT_EQ(Blocked(a, n, p, 64, 2), one_thread);
  }
}

TEST(ModularLu, SingularMatricesGiveZero) {
  std::mt19937_64 rng(34);
  const int64_t n = 2 * kPanel + 3;
  const int64_t rank = n - 5;
  for (const uint64_t p : Primes()) {
    SCOPED_TRACE(::testing::Message() << "p=" << p);
    std::vector<uint64_t> duplicate = RandomResidues(n, p, rng);
    std::copy_n(&duplicate[5 * n], n, &duplicate[(n - 2) * n]);
    EXPECT_EQ(Blocked(duplicate, n, p), 0u);
    // A zero column in the second panel.
    std::vector<uint64_t> zero_column = RandomResidues(n, p, rng);
    for (int64_t i = 0; i < n; ++i) zero_column[i * n + kPanel + 7] = 0;
    EXPECT_EQ(Blocked(zero_column, n, p), 0u);
    // B C with B n x rank and C rank x n.
    const std::vector<uint64_t> b = RandomResidues(n, p, rng);
    const std::vector<uint64_t> c = RandomResidues(n, p, rng);
    std::vector<uint64_t> product(static_cast<size_t>(n * n), 0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < rank; ++k) {
        for (int64_t j = 0; j < n; ++j) {
          uint64_t& x = product[i * n + j];
          x = AddMod(x, MulMod(b[i * n + k], c[k * n + j], p), p);
        }
      }
    }
    EXPECT_EQ(Blocked(product, n, p), 0u);
  }
}

TEST(ModularLu, PivotsAreFoundDeepInsideAPanel) {
  std::mt19937_64 rng(35);
  std::uniform_int_distribution<int64_t> entry(-9, 9);
  const int64_t n = 2 * kNarrowPanel + 3;
  for (const uint64_t p : Primes()) {
    SCOPED_TRACE(::testing::Message() << "p=" << p);
    std::vector<int64_t> a(static_cast<size_t>(n * n));
    for (int64_t& x : a) x = entry(rng);
    // Column j is zero above row n - 4 - j % 3 for the first columns of both panels and the
    // middle of the first, so the elimination must search (and swap from) far below the diagonal.
    for (const int64_t j :
         {int64_t{0}, int64_t{1}, kNarrowPanel / 2, kNarrowPanel, kNarrowPanel + 1}) {
      for (int64_t i = 0; i < n - 4 - j % 3; ++i) a[i * n + j] = 0;
    }
    EXPECT_EQ(Blocked(Residues(a, p), n, p, kNarrowPanel),
              testing::BareissResidue(a, static_cast<int>(n), p));
  }
}

TEST(ModularLu, PermutationMatricesGiveTheirSign) {
  std::mt19937_64 rng(36);
  const int64_t n = 3 * kPanel + 1;
  for (const uint64_t p : Primes()) {
    std::vector<int64_t> permutation(n);
    std::iota(permutation.begin(), permutation.end(), 0);
    std::shuffle(permutation.begin(), permutation.end(), rng);
    std::vector<uint64_t> a(static_cast<size_t>(n * n), 0);
    for (int64_t i = 0; i < n; ++i) a[i * n + permutation[i]] = 1;
    // The sign is (-1)^(n - number of cycles).
    int64_t cycles = 0;
    std::vector<bool> seen(n, false);
    for (int64_t i = 0; i < n; ++i) {
      if (seen[i]) continue;
      ++cycles;
      for (int64_t j = i; !seen[j]; j = permutation[j]) seen[j] = true;
    }
    const uint64_t sign = (n - cycles) % 2 == 0 ? 1 : p - 1;
    EXPECT_EQ(Blocked(a, n, p), sign) << "p=" << p;
  }
}

TEST(ModularLu, CancelledJobReturnsCancelled) {
  std::mt19937_64 rng(37);
  const int64_t n = 2 * kPanel;
  JobControl control;
  control.Cancel();
  ComputeStats stats;
  const absl::StatusOr<uint64_t> det = BlockedModularDeterminant(
      RandomResidues(n, 65521, rng), n, 65521, ModularLuOptions{}, ProgressRange(&control), &stats);
  EXPECT_EQ(det.status().code(), absl::StatusCode::kCancelled);
}

TEST(ModularLu, ReportsProgressAndAboutTwoThirdsNCubedFlops) {
  std::mt19937_64 rng(38);
  const int64_t n = 3 * kPanel;
  for (const uint64_t p : {uint64_t{65521}, uint64_t{2147483629}}) {
    JobControl control;
    ComputeStats stats;
    const absl::StatusOr<uint64_t> det = BlockedModularDeterminant(
        RandomResidues(n, p, rng), n, p, ModularLuOptions{}, ProgressRange(&control), &stats);
    ASSERT_TRUE(det.ok()) << det.status();
    EXPECT_EQ(control.progress(), 1.0);
    const double two_thirds_n_cubed = 2.0 / 3.0 * static_cast<double>(n * n * n);
    EXPECT_GT(stats.flops, 0.9 * two_thirds_n_cubed);
    EXPECT_LT(stats.flops, 1.1 * two_thirds_n_cubed);
    EXPECT_GT(stats.bytes_moved, 0u);
  }
}

TEST(ModularLu, EliminationEntryPointMatchesUnblockedForLargeMatrices) {
  std::mt19937_64 rng(39);
  const int64_t n = 2 * kPanel + 1;
  const uint64_t p = PrimeBelow(kModulusLimit);
  const std::vector<uint64_t> a = RandomResidues(n, p, rng);
  ComputeStats stats;
  const absl::StatusOr<uint64_t> det =
      cpu::ModularEliminationDeterminant(a, n, p, 2, ProgressRange(nullptr), &stats);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(*det, Unblocked(a, n, p));
}

}  // namespace
}  // namespace matrixd
