// A Backend that forwards every call to another one (leveldb's EnvWrapper): derive from it and
// override only what changes, e.g. a backend that records metrics or sends some jobs elsewhere.
#ifndef MATRIXD_CORE_BACKEND_WRAPPER_H_
#define MATRIXD_CORE_BACKEND_WRAPPER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.h"

namespace matrixd {

class BackendWrapper : public Backend {
 public:
  // REQUIRES: target != nullptr.
  explicit BackendWrapper(std::unique_ptr<Backend> target) : target_(std::move(target)) {}

  Backend& target() const { return *target_; }

  std::string_view name() const override { return target_->name(); }
  std::string device() const override { return target_->device(); }
  std::vector<std::pair<std::string, std::string>> Versions() const override {
    return target_->Versions();
  }
  absl::Status Supports(const OperationQuery& query) const override {
    return target_->Supports(query);
  }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    return target_->Determinant(a, options, control);
  }
  absl::StatusOr<std::vector<DeterminantResult>> DeterminantBatch(const MatrixView& a,
                                                                  int64_t batch_count,
                                                                  const DeterminantOptions& options,
                                                                  JobControl* control) override {
    return target_->DeterminantBatch(a, batch_count, options, control);
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    return target_->Factorize(a, options, rhs, control);
  }
  absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                    const SolveOptions& options, JobControl* control) override {
    return target_->Solve(factorization, rhs, options, control);
  }
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    return target_->Multiply(a, b, options, control);
  }
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                            JobControl* control) override {
    return target_->Permanent(a, options, control);
  }

  uint64_t DeterminantDeviceBytes(const MatrixView& a,
                                  const DeterminantOptions& options) const override {
    return target_->DeterminantDeviceBytes(a, options);
  }
  uint64_t FactorizeDeviceBytes(const MatrixView& a, const FactorizeOptions& options,
                                const MatrixView* rhs) const override {
    return target_->FactorizeDeviceBytes(a, options, rhs);
  }
  uint64_t SolveDeviceBytes(const FactorizationView& factorization, const MatrixView& rhs,
                            const SolveOptions& options) const override {
    return target_->SolveDeviceBytes(factorization, rhs, options);
  }
  uint64_t MultiplyDeviceBytes(const MatrixView& a, const MatrixView& b,
                               const MultiplyOptions& options) const override {
    return target_->MultiplyDeviceBytes(a, b, options);
  }
  uint64_t PermanentDeviceBytes(const MatrixView& a,
                                const PermanentOptions& options) const override {
    return target_->PermanentDeviceBytes(a, options);
  }
  std::unique_ptr<HostMemoryPin> PinHostMemory(const void* data, size_t bytes) override {
    return target_->PinHostMemory(data, bytes);
  }
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> AllocateResident(int64_t rows, int64_t cols,
                                                                   DType dtype,
                                                                   int device_index) override {
    return target_->AllocateResident(rows, cols, dtype, device_index);
  }
  absl::StatusOr<std::unique_ptr<IpcMemory>> OpenCudaIpc(std::span<const std::byte> raw_handle,
                                                         int device_id,
                                                         uint64_t byte_size) override {
    return target_->OpenCudaIpc(raw_handle, device_id, byte_size);
  }
  bool DeterminantReadsOnDevice(const MatrixView& a,
                                const DeterminantOptions& options) const override {
    return target_->DeterminantReadsOnDevice(a, options);
  }
  bool ComputesOnHost() const override { return target_->ComputesOnHost(); }
  bool MultiplyReadsOnDevice(const MatrixView& a, const MatrixView& b,
                             const MultiplyOptions& options) const override {
    return target_->MultiplyReadsOnDevice(a, b, options);
  }
  bool FactorizeReadsOnDevice(const MatrixView& a, const FactorizeOptions& options,
                              const MatrixView* rhs) const override {
    return target_->FactorizeReadsOnDevice(a, options, rhs);
  }
  bool DeterminantRunsOnHost(const MatrixView& a,
                             const DeterminantOptions& options) const override {
    return target_->DeterminantRunsOnHost(a, options);
  }
  bool FactorizeRunsOnHost(const MatrixView& a, const FactorizeOptions& options,
                           const MatrixView* rhs) const override {
    return target_->FactorizeRunsOnHost(a, options, rhs);
  }
  bool FactorizeChecksFinite(const MatrixView& a, const FactorizeOptions& options,
                             const MatrixView* rhs) const override {
    return target_->FactorizeChecksFinite(a, options, rhs);
  }
  std::vector<DeviceMemoryUsage> DeviceMemory() const override { return target_->DeviceMemory(); }
  absl::StatusOr<std::vector<DeviceCopyBandwidth>> MeasureCopyBandwidth() override {
    return target_->MeasureCopyBandwidth();
  }

 private:
  std::unique_ptr<Backend> target_;
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_BACKEND_WRAPPER_H_
