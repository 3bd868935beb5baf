// The row permutation of a distributed LU from its pivot vector, read the ways pivot_counts.h
// describes (NVIDIA does not spell out the layout or index base of cusolverMg's pivots): each
// reading is a candidate vector of n pivots in step order; the one whose pivots all lie in
// [j, n) for step j, with the last step's the last row (in base 0 or base 1), is taken. Pure
// arithmetic, tested without a GPU.
#ifndef MATRIXD_CORE_MULTI_GPU_PIVOT_PERMUTATION_H_
#define MATRIXD_CORE_MULTI_GPU_PIVOT_PERMUTATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace matrixd::multi_gpu {

// The n pivots of a 1 x procs block-cyclic vector from each process's part: entry l of parts[p]
// is step ((l / block) * procs + p) * block + l % block. Steps no part holds stay -1.
std::vector<int64_t> GatherCyclicPivots(const std::vector<std::vector<int64_t>>& parts, int64_t n,
                                        int64_t block);

// The 0-based permutation with A[permutation[i], :] = (L U)[i, :] (LAPACK's row swaps applied in
// order to 0..n-1) from the first reading that passes the checks above. INTERNAL when none does,
// or when two that do give different permutations.
absl::StatusOr<std::vector<int64_t>> PermutationFromPivots(
    absl::Span<const std::vector<int64_t>> readings, int64_t n);

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_PIVOT_PERMUTATION_H_
