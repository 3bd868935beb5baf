#include "core/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/cuda/copy_bandwidth.h"
#include "core/cuda/determinant.h"
#include "core/cuda/device_context.h"
#include "core/cuda/factorize.h"
#include "core/cuda/memory_estimate.h"
#include "core/cuda/multiply.h"
#include "core/cuda/permanent.h"

namespace matrixd {
namespace {

// One device and the lock that serialises the operations on it (until the job queue hands each
// device to one worker).
struct DeviceSlot {
  std::unique_ptr<cuda::DeviceContext> context;
  std::string description;  // "NVIDIA H100 80GB HBM3 (device 0)"
  absl::Mutex mutex;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(std::vector<std::unique_ptr<DeviceSlot>> slots) : slots_(std::move(slots)) {
    std::vector<std::string> descriptions;
    for (const auto& slot : slots_) descriptions.push_back(slot->description);
    device_ = absl::StrJoin(descriptions, "; ");
  }

  std::string_view name() const override { return "cuda"; }
  std::string device() const override { return device_; }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    return Timed([&](cuda::DeviceContext& context) {
      return cuda::Determinant(a, options, context, control);
    });
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    return Timed([&](cuda::DeviceContext& context) {
      return cuda::Factorize(a, options, rhs, context, control);
    });
  }
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    return Timed([&](cuda::DeviceContext& context) {
      return cuda::Multiply(a, b, options, context, control);
    });
  }
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                            JobControl* control) override {
    return Timed([&](cuda::DeviceContext& context) {
      return cuda::Permanent(a, options, context, control);
    });
  }

  uint64_t DeterminantDeviceBytes(const MatrixView& a,
                                  const DeterminantOptions& options) const override {
    return cuda::DeterminantDeviceBytes(a, options);
  }
  uint64_t FactorizeDeviceBytes(const MatrixView& a, const FactorizeOptions& options,
                                const MatrixView* rhs) const override {
    return cuda::FactorizeDeviceBytes(a, options, rhs);
  }
  uint64_t MultiplyDeviceBytes(const MatrixView& a, const MatrixView& b,
                               const MultiplyOptions& options) const override {
    return cuda::MultiplyDeviceBytes(a, b, options);
  }
  uint64_t PermanentDeviceBytes(const MatrixView& a,
                                const PermanentOptions& options) const override {
    return cuda::PermanentDeviceBytes(a, options);
  }

  // Pool counters need no lock: the driver keeps them.
  std::vector<DeviceMemoryUsage> DeviceMemory() const override {
    std::vector<DeviceMemoryUsage> usages;
    for (const auto& slot : slots_) {
      const cuda::DeviceContext& context = *slot->context;
      DeviceMemoryUsage usage{.device = slot->description,
                              .total = context.properties().totalGlobalMem,
                              .limit = context.memory_limit()};
      if (absl::StatusOr<cuda::MemoryPoolUsage> pool = context.MemoryUsage(); pool.ok()) {
        usage.used = pool->used;
        usage.reserved = pool->reserved;
      }
      usages.push_back(usage);
    }
    return usages;
  }

  absl::StatusOr<std::vector<DeviceCopyBandwidth>> MeasureCopyBandwidth() override {
    std::vector<DeviceCopyBandwidth> bandwidths;
    for (const auto& slot : slots_) {
      absl::MutexLock lock(&slot->mutex);
      // A 256 MiB copy runs for about 0.2 ms on an H100: long enough for events to time well.
      const size_t bytes = static_cast<size_t>(
          std::min<uint64_t>(uint64_t{256} << 20, slot->context->memory_limit() / 8));
      absl::StatusOr<double> bandwidth = cuda::MeasureCopyBandwidth(*slot->context, bytes);
      if (!bandwidth.ok()) return bandwidth.status();
      bandwidths.push_back({.device = slot->description, .bytes_per_second = *bandwidth});
    }
    return bandwidths;
  }

 private:
  // Runs `op` on the first device (several devices per operation come later) with the device's
  // lock held. stats.seconds is the time between two events on the device's stream recorded
  // around `op`: the device work, the transfers, and any host work `op` does in between (such as
  // the Chinese remaindering of an exact determinant), without the wait for the lock.
  template <typename Op>
  auto Timed(Op&& op) -> decltype(op(std::declval<cuda::DeviceContext&>())) {
    DeviceSlot& slot = *slots_.front();
    absl::MutexLock lock(&slot.mutex);
    cuda::DeviceContext& context = *slot.context;
    if (absl::Status s = context.Activate(); !s.ok()) return s;
    absl::StatusOr<cuda::EventTimer> timer = cuda::EventTimer::Create();
    if (!timer.ok()) return timer.status();
    if (absl::Status s = timer->Start(context.stream()); !s.ok()) return s;
    auto result = op(context);
    if (!result.ok()) return result;
    if (absl::Status s = timer->Stop(context.stream()); !s.ok()) return s;
    absl::StatusOr<double> seconds = timer->Seconds();
    if (!seconds.ok()) return seconds.status();
    result->stats.backend = "cuda";
    result->stats.device = slot.description;
    result->stats.seconds = *seconds;
    return result;
  }

  std::vector<std::unique_ptr<DeviceSlot>> slots_;
  std::string device_;
};

}  // namespace

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    // No driver, no device, or a driver too old: all mean "no CUDA here". Clear the error so that
    // it does not surface later as the result of an unrelated call.
    static_cast<void>(cudaGetLastError());
    return 0;
  }
  return count;
}

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const std::vector<int>& devices,
                                                         const DeviceMemoryLimit& memory_limit) {
  const int count = CudaDeviceCount();
  if (count == 0) {
    return absl::UnavailableError(
        "backend \"cuda\": no usable CUDA device (cudaGetDeviceCount found none or failed)");
  }
  std::vector<int> ordinals = devices.empty() ? std::vector<int>{0} : devices;
  std::vector<std::unique_ptr<DeviceSlot>> slots;
  for (size_t i = 0; i < ordinals.size(); ++i) {
    const int ordinal = ordinals[i];
    if (ordinal < 0 || ordinal >= count) {
      return absl::InvalidArgumentError(absl::StrCat("CUDA device ", ordinal,
                                                     " does not exist; this machine has ", count,
                                                     " device(s), 0 to ", count - 1));
    }
    if (std::find(ordinals.begin(), ordinals.begin() + i, ordinal) != ordinals.begin() + i) {
      return absl::InvalidArgumentError(
          absl::StrCat("CUDA device ", ordinal, " is listed more than once"));
    }
    absl::StatusOr<std::unique_ptr<cuda::DeviceContext>> context =
        cuda::DeviceContext::Create(ordinal, memory_limit);
    if (!context.ok()) return context.status();
    auto slot = std::make_unique<DeviceSlot>();
    slot->description = absl::StrCat((*context)->properties().name, " (device ", ordinal, ")");
    slot->context = *std::move(context);
    slots.push_back(std::move(slot));
  }
  return std::make_unique<CudaBackend>(std::move(slots));
}

}  // namespace matrixd
