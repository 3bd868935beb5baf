// det over Z/p by Gaussian elimination: the CPU path for determinants modulo a prime and the
// per-prime step of the exact integer determinant, which takes the blocked LU of
// core/cpu/modular_lu.h for all but small matrices; and the unblocked elimination itself.
#ifndef MATRIXD_CORE_CPU_MODULAR_ELIMINATION_H_
#define MATRIXD_CORE_CPU_MODULAR_ELIMINATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cpu/progress_range.h"
#include "core/operations.h"

namespace matrixd::cpu {

// det(A) mod p in [0, p). `a` holds the n x n matrix row-major as residues in [0, p). Adds its
// work to stats->flops (one per modular multiply or subtract) and stats->bytes_moved. Returns
// CANCELLED when `progress` is cancelled between panels of columns. Runs on up to `threads`
// threads (OpenBLAS, for the float64 path, keeps its own setting).
// REQUIRES: p prime, 2 <= p < 2^62; a.size() == n * n, n >= 1; threads >= 1.
absl::StatusOr<uint64_t> ModularEliminationDeterminant(std::vector<uint64_t> a, int64_t n,
                                                       uint64_t p, int threads,
                                                       const ProgressRange& progress,
                                                       ComputeStats* stats);

// The same by unblocked elimination on one thread, column by column (the reference for the
// blocked LU, and its path for small n). Returns CANCELLED when `progress` is cancelled between
// columns.
// REQUIRES: as ModularEliminationDeterminant.
absl::StatusOr<uint64_t> UnblockedModularDeterminant(std::vector<uint64_t> a, int64_t n, uint64_t p,
                                                     const ProgressRange& progress,
                                                     ComputeStats* stats);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_MODULAR_ELIMINATION_H_
