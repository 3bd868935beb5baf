// det mod p on the GPU by blocked LU, the fast path of det mod p:
//   p < 2^32:  balanced float64 residues (core/cuda/balanced_residue.h); right-looking LU in panels
//              of 128 columns, each panel factored on the device (leaves of 64 columns in one
//              thread block, triangular solves), the trailing update A22 -= L21 U12 as cuBLAS
//              DGEMM with delayed reduction: one product when every sum stays below 2^53
//              (p < ~2^24), otherwise two on the 16-bit pieces of U12, then one reduction pass.
//              No host round trip inside the factorization (core/cuda/modular_lu_kernels.h).
//   2^32 <= p < 2^62: uint64 residues and the blocked elimination of core/cuda/elimination.h
//              (128-bit products): the float64 pieces would need four or more products there.
#ifndef MATRIXD_CORE_CUDA_MODULAR_LU_H_
#define MATRIXD_CORE_CUDA_MODULAR_LU_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// REQUIRES: a square INT64; p prime < 2^62. Sets residue and method_used = kLu, stats.flops and
// bytes_moved, and (p < 2^32) stats.kernels with the device time of each phase: "modp_residues"
// (upload and reduction of the entries), "modp_panel" (leaves, row swaps, triangular solves and
// the products inside a panel), "modp_gemm" (pieces and DGEMMs of the trailing updates) and
// "modp_reduce" (their reduction passes). CANCELLED when `control` is cancelled between panels.
absl::StatusOr<DeterminantResult> ModularLuDeterminant(const MatrixView& a, uint64_t p,
                                                       DeviceContext& context, JobControl* control);

// INVALID_ARGUMENT unless a is a non-empty square INT64 matrix and 2 <= p < 2^62 (primality is
// the caller's to check), naming the offending field; OK otherwise.
absl::Status ValidateModularDeterminantInput(const MatrixView& a, uint64_t p);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_MODULAR_LU_H_
