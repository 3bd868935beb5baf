// A backend for admission tests without a GPU: it reports `devices` fake devices with a 1000-byte
// limit each, states 100 bytes of device memory per row of a product's left operand, and does the
// arithmetic on the CPU backend. It records the device each product was placed on
// (JobControl::device_index), and an 8-row product holds its memory until Release(). Its resident
// matrices live in host memory but say they are on their device (a device view with that
// device_index), and its determinants read them there and record where they ran. It takes products
// and determinants over several of its devices (devices > 1), as the multi-GPU CUDA backend does,
// and runs them as one-device ones; such a product reads its operands in place, a distributed
// resident one from its parts (it counts those, distributed_operands()). A factorization over
// several devices with keep_on_devices is kept as a FakeKeptFactorization, its bytes counted on
// each device, and solved by it.
#ifndef MATRIXD_TESTS_SERVER_FAKE_DEVICE_BACKEND_H_
#define MATRIXD_TESTS_SERVER_FAKE_DEVICE_BACKEND_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/backend.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/resident_matrix.h"
#include "core/device_factorization.h"
#include "core/distributed_resident_matrix.h"
#include "core/factorization.h"
#include "core/resident_matrix.h"

namespace matrixd::server::testing {

// A host resident matrix that reports itself on fake device `index`, viewed as device memory.
class FakeDeviceResident final : public ResidentMatrix {
 public:
  FakeDeviceResident(std::unique_ptr<ResidentMatrix> host, int index)
      : ResidentMatrix(host->rows(), host->cols(), host->dtype()),
        host_(std::move(host)),
        index_(index) {}
  int device_index() const override { return index_; }
  std::string device() const override { return absl::StrCat("fake device ", index_); }
  absl::Status Write(uint64_t offset, std::span<const std::byte> bytes) override {
    return host_->Write(offset, bytes);
  }
  absl::Status Read(uint64_t offset, std::span<std::byte> out) const override {
    return host_->Read(offset, out);
  }
  MatrixView view() const override {
    MatrixView view = host_->view();
    view.space = MemorySpace::kDevice;
    return view;
  }

 private:
  std::unique_ptr<ResidentMatrix> host_;
  const int index_;
};

// A factorization "kept over" fake devices 0 .. parts - 1 (FactorizeOptions::keep_on_devices):
// the CPU backend's result in host memory, its factor's bytes counted half on each device, solved
// by the CPU backend. Counts how often it solved.
class FakeKeptFactorization final : public DeviceFactorization {
 public:
  FakeKeptFactorization(FactorizeResult result, Backend& cpu, int parts)
      : DeviceFactorization(
            result.kind == FactorizationKind::kLu ? result.lu.rows() : result.l.rows(),
            result.kind == FactorizationKind::kLu ? result.lu.dtype() : result.l.dtype(),
            result.kind),
        result_(std::move(result)),
        cpu_(cpu),
        parts_(parts) {}

  int device_index() const override { return 0; }
  std::string device() const override {
    return absl::StrCat("kept over ", parts_, " fake devices");
  }
  absl::Status Read(uint64_t offset, std::span<std::byte> out) const override {
    if (absl::Status s = CheckRange(offset, out.size()); !s.ok()) return s;
    const Matrix& factor = kind() == FactorizationKind::kLu ? result_.lu : result_.l;
    std::memcpy(out.data(), factor.bytes() + offset, out.size());
    return absl::OkStatus();
  }
  std::vector<DevicePart> Parts() const override {
    std::vector<DevicePart> parts;
    for (int g = 0; g < parts_; ++g) parts.push_back({.device_index = g, .bytes = byte_size() / 2});
    return parts;
  }
  absl::StatusOr<Matrix> Solve(const MatrixView& rhs) override {
    ++solves;
    absl::StatusOr<SolveResult> x = cpu_.Solve(FactorizationOf(result_), rhs, {}, nullptr);
    if (!x.ok()) return x.status();
    return std::move(x->x);
  }

  std::atomic<int> solves{0};

 private:
  const FactorizeResult result_;
  Backend& cpu_;
  const int parts_;
};

class FakeDeviceBackend final : public Backend {
 public:
  static constexpr uint64_t kLimit = 1000;       // bytes per device
  static constexpr uint64_t kBytesPerRow = 100;  // of a product's left operand

  explicit FakeDeviceBackend(int devices = 1) : devices_(devices) {}

  // "fake device 0", "fake device 1", ...
  static std::string DeviceName(int index) { return absl::StrCat("fake device ", index); }

  std::string_view name() const override { return "fake"; }
  absl::Status Supports(const OperationQuery& query) const override {
    return Backend::Supports(OneDevice(query));
  }
  std::string device() const override { return absl::StrCat(devices_, " fake devices"); }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    {
      absl::MutexLock lock(&mutex_);
      determinants_placed_.push_back(control != nullptr ? control->device_index()
                                                        : JobControl::kAnyDevice);
    }
    MatrixView host = a;  // a fake device view is host memory
    host.space = MemorySpace::kHost;
    DeterminantOptions one = options;
    one.devices = 1;
    return cpu_->Determinant(host, one, control);
  }
  bool DeterminantReadsOnDevice(const MatrixView& /*a*/,
                                const DeterminantOptions& /*options*/) const override {
    return true;
  }
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> AllocateResident(int64_t rows, int64_t cols,
                                                                   DType dtype,
                                                                   int device_index) override {
    absl::StatusOr<std::unique_ptr<ResidentMatrix>> host =
        cpu::MakeHostResidentMatrix(rows, cols, dtype);
    if (!host.ok()) return host.status();
    {
      absl::MutexLock lock(&mutex_);
      allocated_on_.push_back(device_index);
    }
    return std::make_unique<FakeDeviceResident>(*std::move(host), device_index);
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    FactorizeOptions one = options;
    one.devices = 1;
    one.keep_on_devices = false;
    absl::StatusOr<FactorizeResult> result = cpu_->Factorize(a, one, rhs, control);
    if (!result.ok() || options.devices <= 1 || !options.keep_on_devices) return result;
    // Kept "on the devices": the factor moves into the kept factorization.
    FactorizeResult factors;
    factors.kind = result->kind;
    factors.lu = std::exchange(result->lu, Matrix());
    factors.l = std::exchange(result->l, Matrix());
    factors.permutation = result->permutation;
    factors.singular_column = result->singular_column;
    auto kept = std::make_unique<FakeKeptFactorization>(std::move(factors), *cpu_, options.devices);
    {
      absl::MutexLock lock(&mutex_);
      kept_.push_back(kept.get());
    }
    result->kept = std::move(kept);
    return result;
  }
  absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                    const SolveOptions& options, JobControl* control) override {
    if (factorization.kept == nullptr) {
      // A factorization kept on a fake device is host memory.
      FactorizationView host = factorization;
      for (MatrixView* part : {&host.factor, &host.r, &host.permutation, &host.input}) {
        part->space = MemorySpace::kHost;
      }
      MatrixView host_rhs = rhs;
      host_rhs.space = MemorySpace::kHost;
      return cpu_->Solve(host, host_rhs, options, control);
    }
    if (absl::Status s = CheckSolve(factorization, rhs, options); !s.ok()) return s;
    absl::StatusOr<Matrix> x = factorization.kept->Solve(rhs);
    if (!x.ok()) return x.status();
    SolveResult result;
    result.x = *std::move(x);
    return result;
  }
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    {
      absl::MutexLock lock(&mutex_);
      placed_.push_back(control != nullptr ? control->device_index() : JobControl::kAnyDevice);
    }
    if (a.rows == 8) release_.WaitForNotificationWithTimeout(absl::Seconds(10));
    MultiplyOptions one = options;
    one.devices = 1;
    one.method = MultiplyMethod::kAuto;
    one.distributed_a = nullptr;
    one.distributed_b = nullptr;
    Matrix gathered_a;
    Matrix gathered_b;
    absl::StatusOr<MatrixView> host_a = HostView(a, options.distributed_a, gathered_a);
    if (!host_a.ok()) return host_a.status();
    absl::StatusOr<MatrixView> host_b = HostView(b, options.distributed_b, gathered_b);
    if (!host_b.ok()) return host_b.status();
    return cpu_->Multiply(*host_a, *host_b, one, control);
  }
  bool MultiplyReadsOnDevice(const MatrixView& /*a*/, const MatrixView& /*b*/,
                             const MultiplyOptions& options) const override {
    return IsMultiDeviceProduct(options);
  }
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                            JobControl* control) override {
    return cpu_->Permanent(a, options, control);
  }

  uint64_t MultiplyDeviceBytes(const MatrixView& a, const MatrixView& /*b*/,
                               const MultiplyOptions& /*options*/) const override {
    return static_cast<uint64_t>(a.rows) * kBytesPerRow;
  }
  std::vector<DeviceMemoryUsage> DeviceMemory() const override {
    std::vector<DeviceMemoryUsage> usages;
    for (int i = 0; i < devices_; ++i) {
      usages.push_back({.device = DeviceName(i), .total = 2 * kLimit, .limit = kLimit});
    }
    return usages;
  }

  // The device index each product started with, in order.
  std::vector<int> placed() const {
    absl::MutexLock lock(&mutex_);
    return placed_;
  }
  // The device index of each resident matrix allocated, in order.
  std::vector<int> allocated_on() const {
    absl::MutexLock lock(&mutex_);
    return allocated_on_;
  }
  // The device index each determinant ran with, in order.
  std::vector<int> determinants_placed() const {
    absl::MutexLock lock(&mutex_);
    return determinants_placed_;
  }
  // Waits up to 10 s until `count` products have started; true when they have.
  bool AwaitStarted(size_t count) const {
    absl::MutexLock lock(&mutex_);
    const auto started = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
      return placed_.size() >= count;
    };
    return mutex_.AwaitWithTimeout(absl::Condition(&started), absl::Seconds(10));
  }
  // How many distributed resident operands products have read from their parts.
  int distributed_operands() const {
    absl::MutexLock lock(&mutex_);
    return distributed_operands_;
  }
  // The factorizations kept on the devices so far, in order (they may have been freed since).
  std::vector<FakeKeptFactorization*> kept() const {
    absl::MutexLock lock(&mutex_);
    return kept_;
  }
  // Lets held products finish; idempotent.
  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
  }

 private:
  // `m` as host memory: a fake device view is, and a distributed matrix is gathered from its
  // parts into `gathered`.
  absl::StatusOr<MatrixView> HostView(const MatrixView& m,
                                      const DistributedResidentMatrix* distributed,
                                      Matrix& gathered) {
    MatrixView host = m;
    host.space = MemorySpace::kHost;
    if (distributed == nullptr) return host;
    {
      absl::MutexLock lock(&mutex_);
      ++distributed_operands_;
    }
    gathered = Matrix(m.rows, m.cols, m.dtype);
    if (absl::Status read = distributed->Read(0, {gathered.mutable_bytes(), gathered.byte_size()});
        !read.ok()) {
      return read;
    }
    return gathered.view();
  }

  static OperationQuery OneDevice(OperationQuery query) {
    query.multiply.devices = 1;
    query.multiply.method = MultiplyMethod::kAuto;
    query.determinant.devices = 1;
    query.factorize.devices = 1;
    return query;
  }

  const int devices_;
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({.threads = 1});
  absl::Notification release_;
  mutable absl::Mutex mutex_;
  std::vector<int> placed_ ABSL_GUARDED_BY(mutex_);
  std::vector<int> determinants_placed_ ABSL_GUARDED_BY(mutex_);
  std::vector<int> allocated_on_ ABSL_GUARDED_BY(mutex_);
  int distributed_operands_ ABSL_GUARDED_BY(mutex_) = 0;
  std::vector<FakeKeptFactorization*> kept_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace matrixd::server::testing

#endif  // MATRIXD_TESTS_SERVER_FAKE_DEVICE_BACKEND_H_
