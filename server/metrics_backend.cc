#include "server/metrics_backend.h"

namespace matrixd::server {
namespace {

template <typename Result>
absl::StatusOr<Result> Recorded(Metrics& metrics, absl::string_view op, DType dtype,
                                absl::StatusOr<Result> result) {
  if (!result.ok()) return result;
  metrics.RecordKernels(op, dtype, result->stats);
  if constexpr (requires { result->accuracy.has_value(); }) {
    if (result->accuracy.has_value()) metrics.RecordAccuracy(op, result->accuracy->ill_conditioned);
  }
  if constexpr (requires { result->check.has_value(); }) {
    if (result->check.has_value()) metrics.RecordProductCheck(result->check->passed);
  }
  return result;
}

}  // namespace

absl::StatusOr<DeterminantResult> MeteredBackend::Determinant(const MatrixView& a,
                                                              const DeterminantOptions& options,
                                                              JobControl* control) {
  return Recorded(metrics_, kOpDeterminant, a.dtype, target().Determinant(a, options, control));
}

absl::StatusOr<std::vector<DeterminantResult>> MeteredBackend::DeterminantBatch(
    const MatrixView& a, int64_t batch_count, const DeterminantOptions& options,
    JobControl* control) {
  absl::StatusOr<std::vector<DeterminantResult>> results =
      target().DeterminantBatch(a, batch_count, options, control);
  if (!results.ok()) return results;
  for (DeterminantResult& result : *results) {
    result = *Recorded(metrics_, kOpDeterminant, a.dtype,
                       absl::StatusOr<DeterminantResult>(std::move(result)));
  }
  return results;
}

absl::StatusOr<FactorizeResult> MeteredBackend::Factorize(const MatrixView& a,
                                                          const FactorizeOptions& options,
                                                          const MatrixView* rhs,
                                                          JobControl* control) {
  return Recorded(metrics_, kOpFactorize, a.dtype, target().Factorize(a, options, rhs, control));
}

absl::StatusOr<SolveResult> MeteredBackend::Solve(const FactorizationView& factorization,
                                                  const MatrixView& rhs,
                                                  const SolveOptions& options,
                                                  JobControl* control) {
  return Recorded(metrics_, kOpSolve, rhs.dtype,
                  target().Solve(factorization, rhs, options, control));
}

absl::StatusOr<MultiplyResult> MeteredBackend::Multiply(const MatrixView& a, const MatrixView& b,
                                                        const MultiplyOptions& options,
                                                        JobControl* control) {
  return Recorded(metrics_, kOpMultiply, a.dtype, target().Multiply(a, b, options, control));
}

absl::StatusOr<PermanentResult> MeteredBackend::Permanent(const MatrixView& a,
                                                          const PermanentOptions& options,
                                                          JobControl* control) {
  return Recorded(metrics_, kOpPermanent, a.dtype, target().Permanent(a, options, control));
}

}  // namespace matrixd::server
