// A factorization kept to be solved with many times (Backend::Solve): made from Factorize's result,
// and checked against a right-hand side before any work.
#ifndef MATRIXD_CORE_FACTORIZATION_H_
#define MATRIXD_CORE_FACTORIZATION_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd {

// Host views of `result`'s matrices (it must outlive them; result.permutation is viewed as a
// 1 x n INT64 matrix), with singular_column set from LU's, or from QR's first exactly zero R[j, j].
// `input`, if given, is A (for residuals). `batch_count`: the Factorize's (0 for one matrix); a
// batch's singular_member and singular_column name its first singular member.
FactorizationView FactorizationOf(const FactorizeResult& result, const MatrixView* input = nullptr,
                                  int64_t batch_count = 0);

// `f` with a factorization kept whole on one device (FactorizationView::kept whose
// DeviceFactorization::whole_on_one_device()) replaced by the device views of its parts there
// (factor, LU's permutation) and `kept` null: every Solve takes it as it takes a factorization
// kept as resident matrices on that device, transposes included. `f` itself otherwise.
FactorizationView WithKeptParts(const FactorizationView& f);

// Member i of a batched factorization as a factorization of its own (views into f's parts), and
// rows [i * rows, (i + 1) * rows) of a stacked matrix. REQUIRES: 0 <= i < f.members().
FactorizationView MemberOf(const FactorizationView& f, int64_t i);
MatrixView StackedMember(const MatrixView& stacked, int64_t i, int64_t rows);

// A batched solve as one solve per member by `solve_one` (a backend's solve of one matrix, host
// or device views alike): X stacked in host memory, the largest member residual, the stats
// summed. Checks `control` between members.
using SolveOne = std::function<absl::StatusOr<SolveResult>(const FactorizationView&,
                                                           const MatrixView&, const SolveOptions&)>;
absl::StatusOr<SolveResult> SolveEachMember(const FactorizationView& f, const MatrixView& rhs,
                                            const SolveOptions& options, JobControl* control,
                                            const SolveOne& solve_one);

// What every backend's Solve checks first (shapes only; entries are not read), and the server
// before it queues a solve. INVALID_ARGUMENT naming `rhs_field` when B does not fit (another dtype,
// rows != op(A)'s rows, no columns), for a transpose of a factorization other than LU or of one
// kept over several GPUs (FactorizationView::kept), for a
// residual without a kept input, for a QR of a matrix with rows < cols, and for parts of the wrong
// shape or dtype; FAILED_PRECONDITION naming the zero pivot when the factorization is singular.
absl::Status CheckSolve(const FactorizationView& factorization, const MatrixView& rhs,
                        const SolveOptions& options, absl::string_view rhs_field = "rhs");

// "LU", "Cholesky" or "QR".
const char* FactorizationName(FactorizationKind kind);

// Real flops of the solve (and of its residual) by the counts Factorize reports for its solves:
// 2 n^2 per right-hand side for LU and Cholesky, 2 m n + n^2 for QR, 2 m n more for the residual;
// four times that for complex types; times the members of a batch.
double SolveFlops(const FactorizationView& factorization, int64_t rhs_cols, bool residual);

}  // namespace matrixd

#endif  // MATRIXD_CORE_FACTORIZATION_H_
