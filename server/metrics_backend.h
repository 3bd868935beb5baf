// A Backend that forwards every call to another and records each result that succeeded into
// Metrics: its kernel records (Metrics::RecordKernels), its accuracy flag (RecordAccuracy) and its
// product check (RecordProductCheck), so the job code needs no metrics calls.
#ifndef MATRIXD_SERVER_METRICS_BACKEND_H_
#define MATRIXD_SERVER_METRICS_BACKEND_H_

#include <memory>
#include <utility>

#include "core/backend.h"
#include "core/backend_wrapper.h"
#include "server/metrics.h"

namespace matrixd::server {

class MeteredBackend final : public BackendWrapper {
 public:
  // `metrics` must outlive this backend. REQUIRES: inner != nullptr.
  MeteredBackend(std::unique_ptr<Backend> inner, Metrics& metrics)
      : BackendWrapper(std::move(inner)), metrics_(metrics) {}

  // Each member's result is recorded as one determinant's.
  absl::StatusOr<std::vector<DeterminantResult>> DeterminantBatch(const MatrixView& a,
                                                                  int64_t batch_count,
                                                                  const DeterminantOptions& options,
                                                                  JobControl* control) override;
  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override;
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override;
  absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                    const SolveOptions& options, JobControl* control) override;
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override;
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                            JobControl* control) override;

 private:
  Metrics& metrics_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_METRICS_BACKEND_H_
