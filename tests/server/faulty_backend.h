// A backend that fails on purpose (leveldb's FaultInjectionTestEnv over EnvWrapper): the CPU
// backend behind a BackendWrapper, with one armed fault at a time that strikes the n-th call of
// one entry point. A fault returns a chosen status, throws std::bad_alloc or another exception
// (what a backend must never do, and the server must survive), or returns a result of the wrong
// shape. It reports one fake device ("faulty device 0") and states kDeviceBytes of device memory
// for every operation, so that the server's memory admission runs around each job and a test can
// check that it gives everything back.
#ifndef MATRIXD_TESTS_SERVER_FAULTY_BACKEND_H_
#define MATRIXD_TESTS_SERVER_FAULTY_BACKEND_H_

#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "core/backend_wrapper.h"
#include "core/cpu/cpu_backend.h"
#include "core/fault_countdown.h"

namespace matrixd::server::testing {

// The entry points a fault can strike.
enum class FaultyCall {
  kDeterminant,
  kFactorize,
  kSolve,
  kMultiply,
  kPermanent,
  kAllocateResident
};

enum class FaultKind {
  kStatus,      // the call returns Fault::status
  kBadAlloc,    // the call throws std::bad_alloc
  kException,   // the call throws std::runtime_error
  kWrongShape,  // Multiply and Solve: the result matrix has one row too few
};

struct Fault {
  FaultyCall call = FaultyCall::kDeterminant;
  int nth = 1;  // the n-th call of `call` from now on fails
  FaultKind kind = FaultKind::kStatus;
  absl::Status status = absl::InternalError("injected fault");
};

class FaultyBackend final : public BackendWrapper {
 public:
  static constexpr uint64_t kDeviceLimit = uint64_t{64} << 20;
  static constexpr uint64_t kDeviceBytes = 4096;  // every operation's stated device memory

  FaultyBackend() : BackendWrapper(MakeCpuBackend({.threads = 1})) {}

  // Arms `fault`, replacing any armed one.
  void Arm(Fault fault) {
    absl::MutexLock lock(&mutex_);
    fault_ = std::move(fault);
    countdown_.Arm(fault_.nth);
  }
  void Disarm() { countdown_.Disarm(); }
  bool armed() const { return countdown_.armed(); }
  // How many faults have struck.
  int64_t fired() const { return countdown_.fired(); }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    if (std::optional<absl::Status> failed = Strike(FaultyCall::kDeterminant)) return *failed;
    return BackendWrapper::Determinant(a, options, control);
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    if (std::optional<absl::Status> failed = Strike(FaultyCall::kFactorize)) return *failed;
    return BackendWrapper::Factorize(a, options, rhs, control);
  }
  absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                    const SolveOptions& options, JobControl* control) override {
    bool spoil = false;
    if (std::optional<absl::Status> failed = Strike(FaultyCall::kSolve, &spoil)) return *failed;
    absl::StatusOr<SolveResult> result =
        BackendWrapper::Solve(factorization, rhs, options, control);
    if (result.ok() && spoil) result->x = OneRowShort(result->x);
    return result;
  }
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    bool spoil = false;
    if (std::optional<absl::Status> failed = Strike(FaultyCall::kMultiply, &spoil)) return *failed;
    absl::StatusOr<MultiplyResult> result = BackendWrapper::Multiply(a, b, options, control);
    if (result.ok() && spoil) result->c = OneRowShort(result->c);
    return result;
  }
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                            JobControl* control) override {
    if (std::optional<absl::Status> failed = Strike(FaultyCall::kPermanent)) return *failed;
    return BackendWrapper::Permanent(a, options, control);
  }
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> AllocateResident(int64_t rows, int64_t cols,
                                                                   DType dtype,
                                                                   int device_index) override {
    if (std::optional<absl::Status> failed = Strike(FaultyCall::kAllocateResident)) return *failed;
    return BackendWrapper::AllocateResident(rows, cols, dtype, device_index);
  }

  uint64_t DeterminantDeviceBytes(const MatrixView&, const DeterminantOptions&) const override {
    return kDeviceBytes;
  }
  uint64_t FactorizeDeviceBytes(const MatrixView&, const FactorizeOptions&,
                                const MatrixView*) const override {
    return kDeviceBytes;
  }
  uint64_t SolveDeviceBytes(const FactorizationView&, const MatrixView&,
                            const SolveOptions&) const override {
    return kDeviceBytes;
  }
  uint64_t MultiplyDeviceBytes(const MatrixView&, const MatrixView&,
                               const MultiplyOptions&) const override {
    return kDeviceBytes;
  }
  uint64_t PermanentDeviceBytes(const MatrixView&, const PermanentOptions&) const override {
    return kDeviceBytes;
  }
  std::vector<DeviceMemoryUsage> DeviceMemory() const override {
    return {{.device = "faulty device 0", .total = 2 * kDeviceLimit, .limit = kDeviceLimit}};
  }

 private:
  // The failure of this call of `call` when the armed fault strikes it: its status, or nullopt
  // (no fault, or a wrong shape, which sets *spoil). Throws for the exception kinds.
  std::optional<absl::Status> Strike(FaultyCall call, bool* spoil = nullptr) {
    Fault fault;
    {
      absl::MutexLock lock(&mutex_);
      if (fault_.call != call) return std::nullopt;
      fault = fault_;
    }
    if (!countdown_.Fire()) return std::nullopt;
    switch (fault.kind) {
      case FaultKind::kStatus:
        return fault.status;
      case FaultKind::kBadAlloc:
        throw std::bad_alloc();
      case FaultKind::kException:
        throw std::runtime_error("injected fault: the backend threw");
      case FaultKind::kWrongShape:
        if (spoil != nullptr) *spoil = true;
        return std::nullopt;
    }
    return std::nullopt;
  }

  // `m` less its last row (its first rows kept); a 1 x 1 matrix for an empty one.
  static Matrix OneRowShort(const Matrix& m) {
    if (m.rows() == 0) return Matrix(1, 1, m.dtype());
    Matrix shorter(m.rows() - 1, m.cols(), m.dtype());
    std::memcpy(shorter.mutable_bytes(), m.bytes(), shorter.byte_size());
    return shorter;
  }

  absl::Mutex mutex_;
  Fault fault_ ABSL_GUARDED_BY(mutex_);
  FaultCountdown countdown_;
};

}  // namespace matrixd::server::testing

#endif  // MATRIXD_TESTS_SERVER_FAULTY_BACKEND_H_
