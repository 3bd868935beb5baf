// A Backend that forwards every call to another and records the kernel records of each result
// that succeeded into Metrics (Metrics::RecordKernels), so the job code needs no metrics calls.
#ifndef MATRIXD_SERVER_METRICS_BACKEND_H_
#define MATRIXD_SERVER_METRICS_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "server/metrics.h"

namespace matrixd::server {

class MeteredBackend final : public Backend {
 public:
  // `metrics` must outlive this backend. REQUIRES: inner != nullptr.
  MeteredBackend(std::unique_ptr<Backend> inner, Metrics& metrics)
      : inner_(std::move(inner)), metrics_(metrics) {}

  std::string_view name() const override { return inner_->name(); }
  std::string device() const override { return inner_->device(); }
  absl::Status Supports(const OperationQuery& query) const override {
    return inner_->Supports(query);
  }

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

  uint64_t DeterminantDeviceBytes(const MatrixView& a,
                                  const DeterminantOptions& options) const override {
    return inner_->DeterminantDeviceBytes(a, options);
  }
  uint64_t FactorizeDeviceBytes(const MatrixView& a, const FactorizeOptions& options,
                                const MatrixView* rhs) const override {
    return inner_->FactorizeDeviceBytes(a, options, rhs);
  }
  uint64_t SolveDeviceBytes(const FactorizationView& factorization, const MatrixView& rhs,
                            const SolveOptions& options) const override {
    return inner_->SolveDeviceBytes(factorization, rhs, options);
  }
  uint64_t MultiplyDeviceBytes(const MatrixView& a, const MatrixView& b,
                               const MultiplyOptions& options) const override {
    return inner_->MultiplyDeviceBytes(a, b, options);
  }
  uint64_t PermanentDeviceBytes(const MatrixView& a,
                                const PermanentOptions& options) const override {
    return inner_->PermanentDeviceBytes(a, options);
  }
  std::unique_ptr<HostMemoryPin> PinHostMemory(const void* data, size_t bytes) override {
    return inner_->PinHostMemory(data, bytes);
  }
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> AllocateResident(int64_t rows, int64_t cols,
                                                                   DType dtype,
                                                                   int device_index) override {
    return inner_->AllocateResident(rows, cols, dtype, device_index);
  }
  bool DeterminantReadsOnDevice(const MatrixView& a,
                                const DeterminantOptions& options) const override {
    return inner_->DeterminantReadsOnDevice(a, options);
  }
  bool MultiplyReadsOnDevice(const MatrixView& a, const MatrixView& b,
                             const MultiplyOptions& options) const override {
    return inner_->MultiplyReadsOnDevice(a, b, options);
  }
  std::vector<DeviceMemoryUsage> DeviceMemory() const override { return inner_->DeviceMemory(); }
  absl::StatusOr<std::vector<DeviceCopyBandwidth>> MeasureCopyBandwidth() override {
    return inner_->MeasureCopyBandwidth();
  }

 private:
  std::unique_ptr<Backend> inner_;
  Metrics& metrics_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_METRICS_BACKEND_H_
