// det mod p on the GPU by blocked LU, the fast path of det mod p:
//   p < 2^32:  balanced float64 residues (core/cuda/balanced_residue.h); right-looking LU in panels
//              of 128 columns, each panel factored on the device (the diagonal blocks of its two
//              leaves of 64 columns in one thread block each, then inverted mod p: no triangular
//              solves), the rows right of a panel taking Y = D^-1 A12 by products with the leaf
//              inverses, the trailing update A22 -= A21 Y (the Schur complement, = L21 U12) as
//              cuBLAS DGEMM with delayed reduction: one product when every sum stays below 2^53
//              (p < ~2^24), otherwise two on the 16-bit pieces of Y, then one reduction pass.
//              No host round trip inside the factorization (core/cuda/modular_lu_kernels.h).
//              A large matrix in pageable memory comes through the context's pinned staging in
//              pieces of whole rows (ModularLuTuning::piece_rows), each piece's residues written
//              transposed (rows [r0, r1) of A become columns [r0, r1) of the matrix factored,
//              det A^T = det A) on the staging's copy stream, and the LU overlaps the upload: the
//              panels inside the landed columns are factored with their updates cut at the last
//              landed column, and each new piece's columns first take every earlier panel's
//              update in panel order (core/cuda/modular_lu_stages.h). Same operations on every
//              column in the same order as the LU after the whole upload, so the same residue.
//   2^32 <= p < 2^62: uint64 residues and the blocked elimination of core/cuda/elimination.h
//              (128-bit products): the float64 pieces would need four or more products there.
#ifndef MATRIXD_CORE_CUDA_MODULAR_LU_H_
#define MATRIXD_CORE_CUDA_MODULAR_LU_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/device_context.h"
#include "core/cuda/pinned_staging.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// REQUIRES: a square INT64; p prime < 2^62. Sets residue and method_used = kLu, stats.flops and
// bytes_moved, and (p < 2^32) stats.kernels with the device time of each phase: "modp_residues"
// (upload and reduction of the entries; overlapped: from the first piece's transfer to the last
// one's conversion, the host's copies included), "modp_panel" (leaves, row swaps, leaf inverses,
// the products that apply them and the updates inside a panel), "modp_gemm" (pieces and DGEMMs of
// the trailing updates), "modp_reduce" (their reduction passes), "modp_factor" (the whole
// factorization, from its first columns in place to its end) and "modp_total" (the operation's
// device time end to end). Under look-ahead the panel and trailing phases overlap and sum to
// more; overlapped, residues and factor overlap (their sum less total is the overlap).
// CANCELLED when `control` is cancelled between panels.
absl::StatusOr<DeterminantResult> ModularLuDeterminant(const MatrixView& a, uint64_t p,
                                                       DeviceContext& context, JobControl* control);

// ModularLuDeterminant with the entries of `a` (in pageable host memory) taken through `staging`
// whatever their size, as the context's staging takes large ones: for tests of the staged and
// overlapped paths at small orders. REQUIRES: as above; `staging` on context.stream().
absl::StatusOr<DeterminantResult> StagedModularLuDeterminant(const MatrixView& a, uint64_t p,
                                                             PinnedStaging& staging,
                                                             DeviceContext& context,
                                                             JobControl* control);

// det A mod each of `primes` at once, for A n x n INT64 already on the device at `entries` (left
// unchanged): the factorizations of the first path above run side by side as one batch (one
// launch per step for all primes, each trailing update one strided-batched DGEMM), and a prime
// modulo which A is singular stops only its own. Returns the residues in [0, p) in the order of
// `primes`; adds flops, bytes and the per-phase device times (as above, summed into records of
// the same name) to `stats`. CANCELLED as above; INVALID_ARGUMENT for an empty batch, one above
// kMaxResidueBatch primes, or a prime outside [2, 2^32); RESOURCE_EXHAUSTED when the batch does not
// fit (ModularLuBatchBytesPerPrime).
// REQUIRES: n >= 1; primes prime (not checked) and distinct.
absl::StatusOr<std::vector<uint64_t>> BatchedModularLuDeterminants(
    const int64_t* entries, int64_t n, std::span<const uint64_t> primes, DeviceContext& context,
    JobControl* control, ComputeStats* stats);

// Device bytes BatchedModularLuDeterminants allocates per prime for order n when the largest
// prime of the batch is `largest_prime` (primes from 2^24 need the two-piece buffers).
uint64_t ModularLuBatchBytesPerPrime(int64_t n, uint64_t largest_prime);

// Primes below this take one DGEMM per trailing update (ProductPieces(p, panel) == 1), the
// cheapest per bit of the batched path.
inline constexpr uint64_t kOnePieceModulusLimit = uint64_t{1} << 24;

// Process-wide tuning of the first path above, for the benchmarks to compare (the defaults are
// what the operations use otherwise). Read when a factorization starts.
struct ModularLuTuning {
  // Look-ahead: each panel is factored on the device context's high-priority side lane
  // (side_lane.h) while the previous panel's trailing update runs on the context's stream;
  // false: one stream, one after the other. The residues are the same either way.
  bool look_ahead = true;
  // Pageable entries through the pinned staging: the factorization overlaps the upload, as the
  // first path above says, where that pays (pieces sized automatically: at most
  // kMaxOverlappedPieces of them, modular_lu_stages.h; an explicit piece_rows always overlaps);
  // false: it starts after the last piece (entries in A's own layout).
  bool overlap = true;
  // Rows of A per piece of the overlapped upload; 0 (or more than fit): as many as a pinned chunk
  // holds at full width (PinnedStaging::kPieceValues / n, 1024 at n = 4096). Smaller pieces
  // expose less of the host's copy of the first piece, at more and narrower updates.
  int64_t piece_rows = 0;
  // The one-piece products (primes below kOnePieceModulusLimit: the trailing updates, the
  // panels' own and the leaves' inverses applied) by kernels that multiply on the FP64 tensor
  // cores and reduce in the same pass (core/cuda/fused_modular_product.h), reading and writing
  // the updated block once; false: cublasDgemmStridedBatched, then a reduction (the reference
  // the fused kernels are tested against; cuBLASLt's best algorithm for the trailing shapes was
  // measured too, 2026-11-27, and left behind by the fused kernel). The same residues.
  bool fused_products = true;
};
void SetModularLuTuning(const ModularLuTuning& tuning);
ModularLuTuning GetModularLuTuning();

// INVALID_ARGUMENT unless a is a non-empty square INT64 matrix and 2 <= p < 2^62 (primality is
// the caller's to check), naming the offending field; OK otherwise.
absl::Status ValidateModularDeterminantInput(const MatrixView& a, uint64_t p);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_MODULAR_LU_H_
