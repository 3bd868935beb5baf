#include "core/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/cuda/copy_bandwidth.h"
#include "core/cuda/determinant.h"
#include "core/cuda/device_context.h"
#include "core/cuda/device_streams.h"
#include "core/cuda/factorize.h"
#include "core/cuda/memory_estimate.h"
#include "core/cuda/multiply.h"
#include "core/cuda/permanent.h"

namespace matrixd {
namespace {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(std::vector<std::unique_ptr<cuda::DeviceStreams>> devices)
      : devices_(std::move(devices)) {
    std::vector<std::string> descriptions;
    for (const auto& device : devices_) descriptions.push_back(device->description());
    device_ = absl::StrJoin(descriptions, "; ");
  }

  std::string_view name() const override { return "cuda"; }
  std::string device() const override { return device_; }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    return Timed(control, [&](cuda::DeviceContext& context) {
      return cuda::Determinant(a, options, context, control);
    });
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    return Timed(control, [&](cuda::DeviceContext& context) {
      return cuda::Factorize(a, options, rhs, context, control);
    });
  }
  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    return Timed(control, [&](cuda::DeviceContext& context) {
      return cuda::Multiply(a, b, options, context, control);
    });
  }
  absl::StatusOr<PermanentResult> Permanent(const MatrixView& a, const PermanentOptions& options,
                                            JobControl* control) override {
    return Timed(control, [&](cuda::DeviceContext& context) {
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
    for (const auto& device : devices_) {
      const cuda::DeviceContext& context = device->primary();
      DeviceMemoryUsage usage{.device = device->description(),
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
    for (const auto& device : devices_) {
      const cuda::DeviceStreams::Lease lease = device->Acquire();
      cuda::DeviceContext& context = lease.context();
      if (absl::Status s = context.Activate(); !s.ok()) return s;
      // A 256 MiB copy runs for about 0.2 ms on an H100: long enough for events to time well.
      const size_t bytes =
          static_cast<size_t>(std::min<uint64_t>(uint64_t{256} << 20, context.memory_limit() / 8));
      absl::StatusOr<double> bandwidth = cuda::MeasureCopyBandwidth(context, bytes);
      if (!bandwidth.ok()) return bandwidth.status();
      bandwidths.push_back({.device = device->description(), .bytes_per_second = *bandwidth});
    }
    return bandwidths;
  }

 private:
  // The device `control` names (where admission reserved the job's memory), else the one with the
  // fewest operations running, the lowest index among equals.
  cuda::DeviceStreams& ChooseDevice(const JobControl* control) const {
    const int named = control != nullptr ? control->device_index() : JobControl::kAnyDevice;
    if (named >= 0 && named < static_cast<int>(devices_.size())) return *devices_[named];
    cuda::DeviceStreams* least = devices_.front().get();
    int least_busy = least->busy();
    for (size_t i = 1; i < devices_.size() && least_busy > 0; ++i) {
      if (const int busy = devices_[i]->busy(); busy < least_busy) {
        least = devices_[i].get();
        least_busy = busy;
      }
    }
    return *least;
  }

  // Runs `op` on one of the chosen device's streams, waiting while all of them are lent.
  // stats.seconds is the time between two events on that stream recorded around `op`: the device
  // work, the transfers, and any host work `op` does in between (such as the Chinese remaindering
  // of an exact determinant), without the wait for a stream.
  template <typename Op>
  auto Timed(const JobControl* control, Op&& op)
      -> decltype(op(std::declval<cuda::DeviceContext&>())) {
    cuda::DeviceStreams& device = ChooseDevice(control);
    const cuda::DeviceStreams::Lease lease = device.Acquire();
    cuda::DeviceContext& context = lease.context();
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
    result->stats.device = device.description();
    result->stats.seconds = *seconds;
    return result;
  }

  std::vector<std::unique_ptr<cuda::DeviceStreams>> devices_;
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
                                                         const DeviceMemoryLimit& memory_limit,
                                                         int streams_per_device) {
  const int count = CudaDeviceCount();
  if (count == 0) {
    return absl::UnavailableError(
        "backend \"cuda\": no usable CUDA device (cudaGetDeviceCount found none or failed)");
  }
  std::vector<int> ordinals = devices;
  if (ordinals.empty()) {
    for (int ordinal = 0; ordinal < count; ++ordinal) ordinals.push_back(ordinal);
  }
  std::vector<std::unique_ptr<cuda::DeviceStreams>> streams;
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
    absl::StatusOr<std::unique_ptr<cuda::DeviceStreams>> device =
        cuda::DeviceStreams::Create(ordinal, streams_per_device, memory_limit);
    if (!device.ok()) return device.status();
    streams.push_back(*std::move(device));
  }
  return std::make_unique<CudaBackend>(std::move(streams));
}

}  // namespace matrixd
