// The determinant of a distributed LU factor from numbers each rank computes alone: the sum of
// log|U(k,k)| and the counts of negative and zero U(k,k) over the diagonal entries it holds, and
// the row swaps in the part of the pivot vector it holds. Summed over the ranks, they give
// det = (-1)^(swaps + negatives) exp(log-sum). Pure arithmetic (no CUDA, no NCCL), so it is tested
// without a GPU.
#ifndef MATRIXD_CORE_MULTI_GPU_PIVOT_COUNTS_H_
#define MATRIXD_CORE_MULTI_GPU_PIVOT_COUNTS_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace matrixd::multi_gpu {

// det(A) = sign * exp(log_abs); sign 0 (and log_abs -inf) for a singular matrix.
struct DistributedDeterminant {
  int sign = 0;
  double log_abs = 0.0;
};

// What one rank's part of a getrf pivot vector says. cuSOLVERMp lays the vector out like row 1 of
// A: over the process columns, block-cyclically, `pivots[l]` being the pivot row of global column
// ((l / block) * grid_cols + grid_col) * block + l % block. As the library does not document the
// index base, counts are kept for both: the last column's pivot can only be the last row (n with
// base 1, n - 1 with base 0), which tells them apart once summed over the ranks. Doubles, so that
// they travel in one all-reduce with the diagonal's sums.
struct PivotCounts {
  double swaps_base1 = 0;    // columns j with pivot != j + 1
  double swaps_base0 = 0;    // columns j with pivot != j
  double invalid_base1 = 0;  // pivots outside [j + 1, n]
  double invalid_base0 = 0;  // pivots outside [j, n - 1]
  double last_is_base1 = 0;  // the last column's pivot is n
  double last_is_base0 = 0;  // the last column's pivot is n - 1

  static constexpr int kFields = 6;
  std::array<double, kFields> ToArray() const;
  static PivotCounts FromArray(const double* values);
};

// Counts for the first `local_columns` entries of `pivots`, the part of process column `grid_col`
// of `grid_cols` of the pivot vector of an n-column factor with blocks of `block`.
PivotCounts CountPivots(const std::vector<int64_t>& pivots, int64_t local_columns, int64_t n,
                        int64_t block, int grid_cols, int grid_col);

// The determinant from the summed diagonal numbers (log-sum, negatives, zeros) and the pivot counts
// summed over the ranks of one process row. INTERNAL when the counts do not single out one index
// base or a pivot is out of range.
absl::StatusOr<DistributedDeterminant> CombineDeterminant(double log_sum, double negatives,
                                                          double zeros, const PivotCounts& pivots);

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_PIVOT_COUNTS_H_
