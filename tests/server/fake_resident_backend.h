// A backend for resident-matrix tests without a GPU: the CPU backend's operations, and resident
// matrices that belong to "device 0" (host memory standing in for it) and can be spilled and
// restored, counting both, so that the registry's spilling and admission are testable here.
#ifndef MATRIXD_TESTS_SERVER_FAKE_RESIDENT_BACKEND_H_
#define MATRIXD_TESTS_SERVER_FAKE_RESIDENT_BACKEND_H_

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cpu/cpu_backend.h"
#include "core/matrix.h"
#include "core/resident_matrix.h"

namespace matrixd::server {

class FakeDeviceResidentMatrix final : public ResidentMatrix {
 public:
  FakeDeviceResidentMatrix(int64_t rows, int64_t cols, DType dtype, std::atomic<int>* spills)
      : ResidentMatrix(rows, cols, dtype), device_(rows, cols, dtype), spills_(spills) {}

  int device_index() const override { return 0; }
  std::string device() const override { return "fake device 0"; }
  absl::Status Write(uint64_t offset, std::span<const std::byte> bytes) override {
    if (absl::Status s = CheckRange(offset, bytes.size()); !s.ok()) return s;
    std::memcpy(Bytes() + offset, bytes.data(), bytes.size());
    return absl::OkStatus();
  }
  absl::Status Read(uint64_t offset, std::span<std::byte> out) const override {
    if (absl::Status s = CheckRange(offset, out.size()); !s.ok()) return s;
    std::memcpy(out.data(), spilled_ ? host_.bytes() + offset : device_.bytes() + offset,
                out.size());
    return absl::OkStatus();
  }
  uint64_t device_bytes() const override { return spilled_ ? 0 : byte_size(); }
  bool spilled() const override { return spilled_; }
  absl::Status Spill() override {
    if (spilled_) return absl::OkStatus();
    host_ = Matrix::CopyOf(device_.view());
    device_ = Matrix();
    spilled_ = true;
    if (spills_ != nullptr) ++*spills_;
    return absl::OkStatus();
  }
  absl::Status Restore() override {
    if (!spilled_) return absl::OkStatus();
    device_ = Matrix::CopyOf(host_.view());
    host_ = Matrix();
    spilled_ = false;
    return absl::OkStatus();
  }
  MatrixView view() const override { return device_.view(); }

 private:
  std::byte* Bytes() { return spilled_ ? host_.mutable_bytes() : device_.mutable_bytes(); }

  Matrix device_;
  Matrix host_;
  bool spilled_ = false;
  std::atomic<int>* spills_;
};

class FakeResidentBackend final : public Backend {
 public:
  FakeResidentBackend() : cpu_(MakeCpuBackend({.threads = 1})) {}

  std::string_view name() const override { return "fake"; }
  std::string device() const override { return "fake device 0"; }
  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    return cpu_->Determinant(a, options, control);
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    return cpu_->Factorize(a, options, rhs, control);
  }
  absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                    const SolveOptions& options, JobControl* control) override {
    return cpu_->Solve(factorization, rhs, options, control);
  }
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    return cpu_->Multiply(a, b, options, control);
  }
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                            JobControl* control) override {
    return cpu_->Permanent(a, options, control);
  }
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> AllocateResident(int64_t rows, int64_t cols,
                                                                   DType dtype,
                                                                   int /*device_index*/) override {
    return std::make_unique<FakeDeviceResidentMatrix>(rows, cols, dtype, &spills);
  }

  std::atomic<int> spills{0};

 private:
  std::unique_ptr<Backend> cpu_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_TESTS_SERVER_FAKE_RESIDENT_BACKEND_H_
