// Checks of an operation's inputs, shared by the server (before any work is queued), the CLI and
// the benchmarks. Each returns INVALID_ARGUMENT with a message that names the field (as given by
// the caller, e.g. "matrix" or "a") and the offending value; OK otherwise.
#ifndef MATRIXD_CORE_VALIDATION_H_
#define MATRIXD_CORE_VALIDATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd {

// Size limits the server enforces; the defaults suit one process on one machine.
struct Limits {
  int64_t max_elements = int64_t{1} << 28;  // per input matrix (2 GiB of float64)
  int max_permanent_n = 30;
};

// rows, cols >= 1, and every floating-point entry finite (no NaN, no Inf). The entries of a device
// view (MatrixView::on_device) are not read: its owner checks them when it stores the matrix
// (AllFinite), and the symmetry check of CHOLESKY is skipped for it too.
absl::Status ValidateMatrix(const MatrixView& m, absl::string_view field, const Limits& limits);

// True when every floating-point entry of a host view is finite (always for integer dtypes).
bool AllFinite(const MatrixView& m);

// The INVALID_ARGUMENT ValidateMatrix returns for a NaN or Inf entry: "`field`[row, col] is not
// finite (NaN or Inf)" for the row-major element index `element` of a matrix of `cols` columns.
// For a backend that finds the entry itself (Backend::FactorizeChecksFinite).
absl::Status NonFiniteEntryError(absl::string_view field, int64_t element, int64_t cols);

// Who looks for NaN and Inf in a factorization's matrix: ValidateFactorize on the host, or the
// backend while it works (Backend::FactorizeChecksFinite: the same status, without a host pass
// over the operand).
enum class FiniteCheck { kOnHost, kByBackend };

absl::Status ValidateDeterminant(const MatrixView& a, const DeterminantOptions& options,
                                 const Limits& limits);
// estimate_condition's rules: one matrix (batch_count 0), square for LU; a factorization of
// `rows` x `cols` (each matrix of a batch). INVALID_ARGUMENT naming estimate_condition otherwise.
absl::Status CheckEstimateCondition(const FactorizeOptions& options, int64_t rows, int64_t cols);
// devices' rules: >= 1; > 1 (one factorization over several GPUs) only for LU or CHOLESKY of one
// square float32, float64, complex64 or complex128 matrix, without batch_count, refine or
// estimate_condition. INVALID_ARGUMENT naming
// the field that stands in the way (devices, batch_count, refine, estimate_condition, kind,
// matrix.dtype or matrix) otherwise. Whether the backend has that many GPUs is its own check.
absl::Status CheckFactorizeDevices(const FactorizeOptions& options, DType dtype, int64_t rows,
                                   int64_t cols);
// Also: batch_count >= 0, matrix.rows a multiple of batch_count, and the shape rules (square
// for CHOLESKY, for a solve and for a batched LU) applied to each matrix of a batch; for
// CHOLESKY each matrix symmetric (Hermitian) to within rounding (see core/hermitian_check.h);
// CheckEstimateCondition; CheckFactorizeDevices; the refine options as core/refinement.h's
// CheckRefineOptions. With FiniteCheck::kByBackend, a's entries are not read for NaN/Inf (rhs's
// still are).
absl::Status ValidateFactorize(const MatrixView& a, const FactorizeOptions& options,
                               const MatrixView* rhs, const Limits& limits,
                               FiniteCheck finite = FiniteCheck::kOnHost);
absl::Status ValidateMultiply(const MatrixView& a, const MatrixView& b,
                              const MultiplyOptions& options, const Limits& limits);
absl::Status ValidatePermanent(const MatrixView& a, const PermanentOptions& options,
                               const Limits& limits);

}  // namespace matrixd

#endif  // MATRIXD_CORE_VALIDATION_H_
