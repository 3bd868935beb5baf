#include "core/multi_gpu/pivot_counts.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace matrixd::multi_gpu {
namespace {

// The pivots of one process column's part: global column j of the part's l-th entry is
// ((l / block) * grid_cols + grid_col) * block + l % block.
std::vector<int64_t> PartOfPivots(const std::vector<int64_t>& global, int64_t block, int grid_cols,
                                  int grid_col) {
  std::vector<int64_t> part;
  const auto n = static_cast<int64_t>(global.size());
  for (int64_t j = 0; j < n; ++j) {
    if ((j / block) % grid_cols == grid_col) part.push_back(global[static_cast<size_t>(j)]);
  }
  return part;
}

PivotCounts SumOverColumns(const std::vector<int64_t>& global, int64_t block, int grid_cols) {
  double sums[PivotCounts::kFields] = {};
  const auto n = static_cast<int64_t>(global.size());
  for (int c = 0; c < grid_cols; ++c) {
    const std::vector<int64_t> part = PartOfPivots(global, block, grid_cols, c);
    const auto fields =
        CountPivots(part, static_cast<int64_t>(part.size()), n, block, grid_cols, c).ToArray();
    for (int f = 0; f < PivotCounts::kFields; ++f) sums[f] += fields[f];
  }
  return PivotCounts::FromArray(sums);
}

TEST(PivotCounts, OneBasedSwapsSummedOverProcessColumns) {
  // n = 7, block 2 over 3 process columns; swaps at columns 0 (with row 3), 2 and 4.
  const std::vector<int64_t> pivots = {3, 2, 5, 4, 6, 6, 7};
  const PivotCounts counts = SumOverColumns(pivots, 2, 3);
  EXPECT_EQ(counts.swaps_base1, 3);
  EXPECT_EQ(counts.invalid_base1, 0);
  EXPECT_EQ(counts.last_is_base1, 1);
  EXPECT_EQ(counts.last_is_base0, 0);
  auto det = CombineDeterminant(std::log(10.0), 2, 0, counts);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(det->sign, -1);  // three swaps, two negative pivots
  EXPECT_DOUBLE_EQ(det->log_abs, std::log(10.0));
}

TEST(PivotCounts, ZeroBasedPivotsAreRecognised) {
  const std::vector<int64_t> pivots = {2, 1, 4, 3, 5, 5, 6};  // the same swaps, base 0
  const PivotCounts counts = SumOverColumns(pivots, 2, 3);
  EXPECT_EQ(counts.last_is_base0, 1);
  EXPECT_EQ(counts.invalid_base0, 0);
  EXPECT_EQ(counts.swaps_base0, 3);
  auto det = CombineDeterminant(0.5, 0, 0, counts);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(det->sign, -1);
}

TEST(PivotCounts, ReversedRowsNeedFloorHalfSwaps) {
  // Partial pivoting on the reversed tridiagonal matrix swaps row j with row n-1-j for j < n/2.
  for (int64_t n : {1, 2, 5, 8}) {
    std::vector<int64_t> pivots(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) pivots[static_cast<size_t>(j)] = std::max(j, n - 1 - j) + 1;
    auto det = CombineDeterminant(0.0, 0, 0, SumOverColumns(pivots, 3, 2));
    ASSERT_TRUE(det.ok()) << det.status();
    EXPECT_EQ(det->sign, (n / 2) % 2 == 0 ? 1 : -1) << "n=" << n;
  }
}

TEST(PivotCounts, AZeroPivotMakesTheDeterminantZero) {
  auto det = CombineDeterminant(1.0, 0, 1, SumOverColumns({1, 2, 3}, 1, 1));
  ASSERT_TRUE(det.ok());
  EXPECT_EQ(det->sign, 0);
  EXPECT_TRUE(std::isinf(det->log_abs) && det->log_abs < 0);
}

TEST(PivotCounts, PivotsFittingNeitherBaseAreAnError) {
  // A pivot above the column (row 0 for column 2) cannot come from partial pivoting.
  auto det = CombineDeterminant(0.0, 0, 0, SumOverColumns({1, 2, 0, 4}, 2, 2));
  EXPECT_EQ(det.status().code(), absl::StatusCode::kInternal);
}

TEST(PivotCounts, EntriesPastTheMatrixAreIgnored) {
  // A part longer than its columns (padding) adds nothing.
  const PivotCounts counts = CountPivots({1, 2, 99, 99}, 4, 2, 2, 1, 0);
  EXPECT_EQ(counts.swaps_base1, 0);
  EXPECT_EQ(counts.invalid_base1, 0);
  EXPECT_EQ(counts.last_is_base1, 1);
}

}  // namespace
}  // namespace matrixd::multi_gpu
