// det over Z/p by blocked right-looking LU: the CPU path for determinants modulo a prime of order
// 32 and up, with the trailing updates as modular matrix products (core/cpu/modular_gemm.h).
#ifndef MATRIXD_CORE_CPU_MODULAR_LU_H_
#define MATRIXD_CORE_CPU_MODULAR_LU_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cpu/progress_range.h"
#include "core/operations.h"

namespace matrixd::cpu {

struct ModularLuOptions {
  // Columns factored per panel before one trailing update of the rest of the matrix.
  int64_t panel_width = 128;
  // Threads for the trailing updates; OpenBLAS threads the float64 products on its own.
  int threads = 1;
};

// det(A) mod p in [0, p). `a` holds the n x n matrix row-major as residues in [0, p). Adds its
// work to stats->flops (two per multiply-add) and stats->bytes_moved. Returns CANCELLED when
// `progress` is cancelled between panels.
// REQUIRES: p prime, 2 <= p < 2^62; a.size() == n * n, n >= 1; options.panel_width >= 1,
// options.threads >= 1.
absl::StatusOr<uint64_t> BlockedModularDeterminant(std::vector<uint64_t> a, int64_t n, uint64_t p,
                                                   const ModularLuOptions& options,
                                                   const ProgressRange& progress,
                                                   ComputeStats* stats);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_MODULAR_LU_H_
