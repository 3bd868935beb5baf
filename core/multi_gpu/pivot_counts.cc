#include "core/multi_gpu/pivot_counts.h"

#include <cmath>
#include <limits>
#include <optional>

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

PivotCounts CountPivots(const std::vector<int64_t>& pivots, int64_t local_count, int64_t n,
                        int64_t block, int procs, int coord) {
  PivotCounts counts;
  for (int64_t l = 0; l < local_count && l < static_cast<int64_t>(pivots.size()); ++l) {
    const int64_t j = ((l / block) * procs + coord) * block + l % block;
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
                                                          double zeros, double nonfinite,
                                                          absl::Span<const PivotCounts> readings) {
  std::optional<bool> odd_swaps;
  std::string tried;
  for (const PivotCounts& r : readings) {
    const bool valid[2] = {r.last_is_base0 == 1 && r.invalid_base0 == 0,
                           r.last_is_base1 == 1 && r.invalid_base1 == 0};
    const double swaps[2] = {r.swaps_base0, r.swaps_base1};
    for (int base = 0; base < 2; ++base) {
      if (!valid[base]) continue;
      const bool odd = std::llround(swaps[base]) % 2 != 0;
      if (odd_swaps.has_value() && *odd_swaps != odd) {
        return absl::InternalError(
            "getrf pivots: two readings of the pivot vector pass the checks and disagree on the "
            "sign");
      }
      odd_swaps = odd;
    }
    absl::StrAppend(&tried, tried.empty() ? "" : "; ", "out of range ", r.invalid_base0,
                    " (base 0) ", r.invalid_base1, " (base 1), last pivot ", r.last_is_base0,
                    " (base 0) ", r.last_is_base1, " (base 1)");
  }
  if (!odd_swaps.has_value()) {
    return absl::InternalError(
        absl::StrCat("getrf pivots fit no reading of the pivot vector: ", tried));
  }
  if (zeros > 0) {
    return DistributedDeterminant{.sign = 0, .log_abs = -std::numeric_limits<double>::infinity()};
  }
  if (nonfinite > 0) {
    return absl::OutOfRangeError(
        "determinant: element growth during LU overflowed the double range");
  }
  const bool odd = *odd_swaps != (std::llround(negatives) % 2 != 0);
  return DistributedDeterminant{.sign = odd ? -1 : 1, .log_abs = log_sum};
}

}  // namespace matrixd::multi_gpu
