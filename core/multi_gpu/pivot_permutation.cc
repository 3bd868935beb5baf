#include "core/multi_gpu/pivot_permutation.h"

#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace matrixd::multi_gpu {
namespace {

// The permutation of `pivots` read in `base`, or nothing when a pivot is out of range.
std::optional<std::vector<int64_t>> PermutationIn(const std::vector<int64_t>& pivots, int64_t n,
                                                  int64_t base) {
  if (static_cast<int64_t>(pivots.size()) < n || n < 1 || pivots[n - 1] - base != n - 1) {
    return std::nullopt;
  }
  std::vector<int64_t> permutation(static_cast<size_t>(n));
  std::iota(permutation.begin(), permutation.end(), int64_t{0});
  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = pivots[j] - base;
    if (p < j || p >= n) return std::nullopt;
    std::swap(permutation[j], permutation[p]);
  }
  return permutation;
}

}  // namespace

std::vector<int64_t> GatherCyclicPivots(const std::vector<std::vector<int64_t>>& parts, int64_t n,
                                        int64_t block) {
  std::vector<int64_t> pivots(static_cast<size_t>(n), -1);
  const auto procs = static_cast<int64_t>(parts.size());
  for (int64_t p = 0; p < procs; ++p) {
    const std::vector<int64_t>& part = parts[p];
    for (int64_t l = 0; l < static_cast<int64_t>(part.size()); ++l) {
      const int64_t step = ((l / block) * procs + p) * block + l % block;
      if (step >= n) break;
      pivots[step] = part[l];
    }
  }
  return pivots;
}

absl::StatusOr<std::vector<int64_t>> PermutationFromPivots(
    absl::Span<const std::vector<int64_t>> readings, int64_t n) {
  std::optional<std::vector<int64_t>> chosen;
  for (const std::vector<int64_t>& reading : readings) {
    for (int64_t base : {int64_t{1}, int64_t{0}}) {
      std::optional<std::vector<int64_t>> permutation = PermutationIn(reading, n, base);
      if (!permutation.has_value()) continue;
      if (chosen.has_value() && *chosen != *permutation) {
        return absl::InternalError(
            "getrf pivots: two readings of the pivot vector pass the checks and give different "
            "permutations");
      }
      chosen = std::move(permutation);
    }
  }
  if (!chosen.has_value()) {
    return absl::InternalError(absl::StrCat("getrf pivots fit none of ", readings.size(),
                                            " readings of the pivot vector (n = ", n, ")"));
  }
  return *std::move(chosen);
}

}  // namespace matrixd::multi_gpu
