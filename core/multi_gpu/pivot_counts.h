// The determinant of a distributed LU factor from numbers each rank computes alone: the sum of
// log|U(k,k)| and the counts of negative and zero U(k,k) over the diagonal entries it holds, and
// the row swaps in the part of the pivot vector it holds. Summed over the ranks, they give
// det = (-1)^(swaps + negatives) exp(log-sum). Pure arithmetic (no CUDA, no NCCL), so it is tested
// without a GPU.
//
// How cuSOLVERMp lays out its pivot vector is not spelled out: NVIDIA's sample allocates it like
// row 1 of A (over the process columns, `LOCc(N)` entries) and says it "overlaps A[IA, JA:JA+N] as
// in Netlib's ScaLAPACK", whose vector is laid out like column 1 of A (over the process rows,
// replicated over the process columns); nor is its index base. So every plausible reading is
// counted and checked: under the true one, step j's pivot lies in [j, n) (0-based) for every j and
// the last step's is the last row, which a misread vector fails for nearly any matrix (tested).
#ifndef MATRIXD_CORE_MULTI_GPU_PIVOT_COUNTS_H_
#define MATRIXD_CORE_MULTI_GPU_PIVOT_COUNTS_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace matrixd::multi_gpu {

// det(A) = sign * exp(i angle) * exp(log_abs); sign 0 (and log_abs -inf) for a singular matrix.
// angle (radians, any multiple of 2 pi may be added) is 0 but for a complex matrix.
struct DistributedDeterminant {
  int sign = 0;
  double log_abs = 0.0;
  double angle = 0.0;
};

// One reading of the pivot entries some ranks hold, in both index bases. Doubles, so that they
// travel in one all-reduce with the diagonal's sums.
struct PivotCounts {
  double swaps_base1 = 0;    // steps j with pivot != j + 1
  double swaps_base0 = 0;    // steps j with pivot != j
  double invalid_base1 = 0;  // pivots outside [j + 1, n]
  double invalid_base0 = 0;  // pivots outside [j, n - 1]
  double last_is_base1 = 0;  // the last step's pivot is n
  double last_is_base0 = 0;  // the last step's pivot is n - 1

  static constexpr int kFields = 6;
  std::array<double, kFields> ToArray() const;
  static PivotCounts FromArray(const double* values);
};

// Counts the first `local_count` entries of `pivots` read as the part of process `coord` of
// `procs` of a block-cyclic vector of n steps with blocks of `block`: entry l is the pivot of
// step ((l / block) * procs + coord) * block + l % block. Entries past step n - 1 are ignored.
PivotCounts CountPivots(const std::vector<int64_t>& pivots, int64_t local_count, int64_t n,
                        int64_t block, int procs, int coord);

// The determinant from the summed diagonal numbers (log-sum, negatives, zeros, non-finite: see
// cuda::LaunchDiagonalSummary) and the summed counts of each reading of the pivot vector. Uses the
// readings (and bases) that pass the checks above; INTERNAL when none does, or when two that do
// disagree on the sign. A zero pivot makes det 0; otherwise a non-finite one (element growth past
// the double range) is OUT_OF_RANGE, as on one GPU (cuda::DeterminantOfSummary).
absl::StatusOr<DistributedDeterminant> CombineDeterminant(double log_sum, double negatives,
                                                          double zeros, double nonfinite,
                                                          absl::Span<const PivotCounts> readings);

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_PIVOT_COUNTS_H_
