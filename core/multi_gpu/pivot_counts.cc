#include "core/multi_gpu/pivot_counts.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace matrixd::multi_gpu {

std::array<double, PivotCounts::kFields> PivotCounts::ToArray() const {
  return {swaps_base1, swaps_base0, invalid_base1, invalid_base0, last_is_base1, last_is_base0};
}

PivotCounts PivotCounts::FromArray(const double* values) {
  return {.swaps_base1 = values[0],
          .swaps_base0 = values[1],
          .invalid_base1 = values[2],
          .invalid_base0 = values[3],
          .last_is_base1 = values[4],
          .last_is_base0 = values[5]};
}

PivotCounts CountPivots(const std::vector<int64_t>& pivots, int64_t local_columns, int64_t n,
                        int64_t block, int grid_cols, int grid_col) {
  PivotCounts counts;
  for (int64_t l = 0; l < local_columns && l < static_cast<int64_t>(pivots.size()); ++l) {
    const int64_t j = ((l / block) * grid_cols + grid_col) * block + l % block;
    if (j >= n) break;
    const int64_t p = pivots[static_cast<size_t>(l)];
    counts.swaps_base1 += p != j + 1 ? 1 : 0;
    counts.swaps_base0 += p != j ? 1 : 0;
    counts.invalid_base1 += (p < j + 1 || p > n) ? 1 : 0;
    counts.invalid_base0 += (p < j || p > n - 1) ? 1 : 0;
    if (j == n - 1) {
      counts.last_is_base1 += p == n ? 1 : 0;
      counts.last_is_base0 += p == n - 1 ? 1 : 0;
    }
  }
  return counts;
}

absl::StatusOr<DistributedDeterminant> CombineDeterminant(double log_sum, double negatives,
                                                          double zeros, const PivotCounts& pivots) {
  const bool base1 = pivots.last_is_base1 == 1 && pivots.invalid_base1 == 0;
  const bool base0 = pivots.last_is_base0 == 1 && pivots.invalid_base0 == 0;
  if (!base1 && !base0) {
    return absl::InternalError(
        absl::StrCat("getrf pivots fit neither index base: last pivot votes ", pivots.last_is_base1,
                     " (base 1) ", pivots.last_is_base0, " (base 0); out of range ",
                     pivots.invalid_base1, " (base 1) ", pivots.invalid_base0, " (base 0)"));
  }
  if (zeros > 0) {
    return DistributedDeterminant{.sign = 0, .log_abs = -std::numeric_limits<double>::infinity()};
  }
  const double swaps = base1 ? pivots.swaps_base1 : pivots.swaps_base0;
  const auto odd = static_cast<int64_t>(std::llround(swaps + negatives)) % 2 != 0;
  return DistributedDeterminant{.sign = odd ? -1 : 1, .log_abs = log_sum};
}

}  // namespace matrixd::multi_gpu
