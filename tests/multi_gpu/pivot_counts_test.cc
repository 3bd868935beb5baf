#include "core/multi_gpu/pivot_counts.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd::multi_gpu {
namespace {

// The pivot vector `global` (steps 0..n-1) dealt block-cyclically over `procs` processes: the
// part process `coord` holds.
std::vector<int64_t> PartOf(const std::vector<int64_t>& global, int64_t block, int procs,
                            int coord) {
  std::vector<int64_t> part;
  const auto n = static_cast<int64_t>(global.size());
  for (int64_t j = 0; j < n; ++j) {
    if ((j / block) % procs == coord) part.push_back(global[static_cast<size_t>(j)]);
  }
  return part;
}

PivotCounts Sum(const std::vector<PivotCounts>& parts) {
  double sums[PivotCounts::kFields] = {};
  for (const PivotCounts& part : parts) {
    const auto fields = part.ToArray();
    for (int f = 0; f < PivotCounts::kFields; ++f) sums[f] += fields[f];
  }
  return PivotCounts::FromArray(sums);
}

// The counts a 1 x procs grid's ranks would sum for a vector laid out over them.
PivotCounts Distributed(const std::vector<int64_t>& global, int64_t block, int procs) {
  std::vector<PivotCounts> parts;
  const auto n = static_cast<int64_t>(global.size());
  for (int c = 0; c < procs; ++c) {
    const std::vector<int64_t> part = PartOf(global, block, procs, c);
    parts.push_back(CountPivots(part, static_cast<int64_t>(part.size()), n, block, procs, c));
  }
  return Sum(parts);
}

// Partial pivoting's pivots (base 1) for a random matrix: step j picks a row in [j + 1, n].
std::vector<int64_t> RandomPivots(int64_t n, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<int64_t> pivots(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    pivots[static_cast<size_t>(j)] = std::uniform_int_distribution<int64_t>(j + 1, n)(random);
  }
  return pivots;
}

TEST(PivotCounts, OneBasedSwapsSummedOverProcesses) {
  // n = 7, block 2 over 3 processes; swaps at steps 0 (with row 3), 2 and 4.
  const std::vector<int64_t> pivots = {3, 2, 5, 4, 6, 6, 7};
  const PivotCounts counts = Distributed(pivots, 2, 3);
  EXPECT_EQ(counts.swaps_base1, 3);
  EXPECT_EQ(counts.invalid_base1, 0);
  EXPECT_EQ(counts.last_is_base1, 1);
  EXPECT_EQ(counts.last_is_base0, 0);
  const PivotCounts readings[1] = {counts};
  auto det = CombineDeterminant(std::log(10.0), 2, 0, 0, readings);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(det->sign, -1);  // three swaps, two negative pivots
  EXPECT_DOUBLE_EQ(det->log_abs, std::log(10.0));
}

TEST(PivotCounts, ZeroBasedPivotsAreRecognised) {
  const std::vector<int64_t> pivots = {2, 1, 4, 3, 5, 5, 6};  // the same swaps, base 0
  const PivotCounts counts = Distributed(pivots, 2, 3);
  EXPECT_EQ(counts.last_is_base0, 1);
  EXPECT_EQ(counts.invalid_base0, 0);
  EXPECT_EQ(counts.swaps_base0, 3);
  const PivotCounts readings[1] = {counts};
  auto det = CombineDeterminant(0.5, 0, 0, 0, readings);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(det->sign, -1);
}

TEST(PivotCounts, ReversedRowsNeedFloorHalfSwaps) {
  // Partial pivoting on the reversed tridiagonal matrix swaps row j with row n-1-j for j < n/2.
  for (int64_t n : {1, 2, 5, 8}) {
    std::vector<int64_t> pivots(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) pivots[static_cast<size_t>(j)] = std::max(j, n - 1 - j) + 1;
    const PivotCounts readings[1] = {Distributed(pivots, 3, 2)};
    auto det = CombineDeterminant(0.0, 0, 0, 0, readings);
    ASSERT_TRUE(det.ok()) << det.status();
    EXPECT_EQ(det->sign, (n / 2) % 2 == 0 ? 1 : -1) << "n=" << n;
  }
}

TEST(PivotCounts, AZeroPivotMakesTheDeterminantZero) {
  const PivotCounts readings[1] = {Distributed({1, 2, 3}, 1, 1)};
  auto det = CombineDeterminant(1.0, 0, 1, 0, readings);
  ASSERT_TRUE(det.ok());
  EXPECT_EQ(det->sign, 0);
  EXPECT_TRUE(std::isinf(det->log_abs) && det->log_abs < 0);
}

TEST(PivotCounts, ANonFinitePivotIsOutOfRangeNotZero) {
  // Element growth past the double range: an Inf or NaN on U's diagonal, and no zero pivot.
  const PivotCounts readings[1] = {Distributed({1, 2, 3}, 1, 1)};
  auto det = CombineDeterminant(1.0, 0, 0, 1, readings);
  EXPECT_EQ(det.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(det.status().message().find("overflowed"), absl::string_view::npos);
}

TEST(PivotCounts, AZeroPivotWinsOverANonFiniteOne) {
  // As on one GPU (cuda::DeterminantOfSummary): a singular matrix is det 0 whatever follows.
  const PivotCounts readings[1] = {Distributed({1, 2, 3}, 1, 1)};
  auto det = CombineDeterminant(1.0, 0, 1, 1, readings);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(det->sign, 0);
}

TEST(PivotCounts, PivotsFittingNoReadingAreAnError) {
  // A pivot above its step (row 0 for step 2) cannot come from partial pivoting.
  const PivotCounts readings[1] = {Distributed({1, 2, 0, 4}, 2, 2)};
  auto det = CombineDeterminant(0.0, 0, 0, 0, readings);
  EXPECT_EQ(det.status().code(), absl::StatusCode::kInternal);
}

TEST(PivotCounts, EntriesPastTheMatrixAreIgnored) {
  // A part longer than its steps (padding) adds nothing.
  const PivotCounts counts = CountPivots({1, 2, 99, 99}, 4, 2, 2, 1, 0);
  EXPECT_EQ(counts.swaps_base1, 0);
  EXPECT_EQ(counts.invalid_base1, 0);
  EXPECT_EQ(counts.last_is_base1, 1);
}

// On a 2 x 2 grid the vector lives either over the process columns (held by process row 0) or
// over the process rows (held by process column 0). Read the wrong way, the entries of the
// off-diagonal rank land on other steps and fail the checks, so the right reading decides.
TEST(PivotCounts, TheWrongLayoutFailsTheChecksOnATwoByTwoGrid) {
  const int64_t n = 1001;
  const int64_t block = 64;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<int64_t> truth = RandomPivots(n, seed);
    // Truth: over the process rows (ScaLAPACK), replicated over the columns. Rank (r, c) holds
    // PartOf(truth, block, 2, r).
    const std::vector<int64_t> rank00 = PartOf(truth, block, 2, 0);
    const std::vector<int64_t> rank01 = rank00;  // replicated along process row 0
    const std::vector<int64_t> rank10 = PartOf(truth, block, 2, 1);
    const auto count = [&](const std::vector<int64_t>& part, int coord) {
      return CountPivots(part, static_cast<int64_t>(part.size()), n, block, 2, coord);
    };
    // "Like row 1 of A": ranks (0, 0) and (0, 1), read as process columns 0 and 1.
    const PivotCounts as_row = Sum({count(rank00, 0), count(rank01, 1)});
    // "Like column 1 of A": ranks (0, 0) and (1, 0), read as process rows 0 and 1.
    const PivotCounts as_column = Sum({count(rank00, 0), count(rank10, 1)});
    EXPECT_GT(as_row.invalid_base1 + (as_row.last_is_base1 == 1 ? 0 : 1), 0) << "seed " << seed;
    const PivotCounts readings[2] = {as_row, as_column};
    auto det = CombineDeterminant(0.0, 0, 0, 0, readings);
    ASSERT_TRUE(det.ok()) << det.status();
    int64_t swaps = 0;
    for (int64_t j = 0; j < n; ++j) swaps += truth[static_cast<size_t>(j)] != j + 1 ? 1 : 0;
    EXPECT_EQ(det->sign, swaps % 2 == 0 ? 1 : -1) << "seed " << seed;
  }
}

TEST(PivotCounts, ReadingsThatPassButDisagreeAreAnError) {
  PivotCounts even;
  even.last_is_base1 = 1;
  even.swaps_base1 = 2;
  PivotCounts odd = even;
  odd.swaps_base1 = 3;
  const PivotCounts readings[2] = {even, odd};
  EXPECT_EQ(CombineDeterminant(0.0, 0, 0, 0, readings).status().code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace matrixd::multi_gpu
