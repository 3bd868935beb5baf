#include "core/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/cuda/copy_bandwidth.h"
#include "core/cuda/determinant.h"
#include "core/cuda/determinant_batch.h"
#include "core/cuda/device_context.h"
#include "core/cuda/device_streams.h"
#include "core/cuda/factorize.h"
#include "core/cuda/factorize_batch.h"
#include "core/cuda/host_registration.h"
#include "core/cuda/host_small_jobs.h"
#include "core/cuda/ipc_mapping.h"
#include "core/cuda/kept_factorization.h"
#include "core/cuda/library_versions.h"
#include "core/cuda/memory_estimate.h"
#include "core/cuda/multiply.h"
#include "core/cuda/permanent.h"
#include "core/cuda/resident_matrix.h"
#include "core/cuda/solve.h"
#include "core/status_macros.h"

namespace matrixd {
namespace {

class HostPin final : public HostMemoryPin {
 public:
  explicit HostPin(std::unique_ptr<cuda::PortableHostPin> pin) : pin_(std::move(pin)) {}

 private:
  std::unique_ptr<cuda::PortableHostPin> pin_;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::vector<std::unique_ptr<cuda::DeviceStreams>> devices,
              const DeviceMemoryLimit& memory_limit, std::string state_dir,
              HostMaxOrders host_max_orders)
      : devices_(std::move(devices)),
        memory_limit_(memory_limit),
        state_dir_(std::move(state_dir)),
        host_max_orders_(host_max_orders),
        channels_(devices_.size()) {
    std::vector<std::string> descriptions;
    for (const auto& device : devices_) descriptions.push_back(device->description());
    device_ = absl::StrJoin(descriptions, "; ");
    // The first device's model and driver: a backend's devices are one model in practice, and
    // stats.device names the one each answer ran on.
    versions_ = cuda::CudaLibraryVersions(devices_.front()->primary().properties());
  }

  std::string_view name() const override { return "cuda"; }
  std::string device() const override { return device_; }
  std::vector<std::pair<std::string, std::string>> Versions() const override { return versions_; }

  // cuBLAS and cuSOLVER take int dimensions and batch counts.
  absl::Status Supports(const OperationQuery& query) const override {
    if (absl::Status s = Backend::Supports(query); !s.ok()) return s;
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    return CheckBackendLimits(query, {.backend = "cuda",
                                      .max_permanent_order = cuda::kMaxPermanentOrder,
                                      .max_dimension = kIntMax,
                                      .max_batch_count = kIntMax,
                                      .max_permanent_devices = static_cast<int>(devices_.size())});
  }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    if (DeterminantRunsOnHost(a, options)) {
      return cuda::HostDeterminant(a, options, control);
    }
    return Timed(control, [&](cuda::DeviceContext& context) {
      return cuda::Determinant(a, options, context, control);
    });
  }
  // One batched getrf for the whole batch (core/cuda/determinant_batch.h); each member's stats are
  // its share of the call's.
  absl::StatusOr<std::vector<DeterminantResult>> DeterminantBatch(const MatrixView& a,
                                                                  int64_t batch_count,
                                                                  const DeterminantOptions& options,
                                                                  JobControl* control) override {
    MATRIXD_RETURN_IF_ERROR(CheckDeterminantBatch(a, batch_count, options));
    if (a.on_device()) return Backend::DeterminantBatch(a, batch_count, options, control);
    MATRIXD_ASSIGN_OR_RETURN(cuda::BatchedDeterminants batch,
                             Timed(control, [&](cuda::DeviceContext& context) {
                               return cuda::DeterminantBatch(a, batch_count, context, control);
                             }));
    const ComputeStats share = ShareOf(batch.stats, batch_count);
    std::vector<DeterminantResult> results(batch.values.size());
    for (size_t b = 0; b < results.size(); ++b) {
      results[b].value = batch.values[b];
      results[b].method_used = DeterminantMethod::kLu;
      results[b].stats = share;
    }
    return results;
  }
  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    if (FactorizeRunsOnHost(a, options, rhs)) return cuda::HostFactorize(a, options, rhs, control);
    return Timed(control, [&](cuda::DeviceContext& context) -> absl::StatusOr<FactorizeResult> {
      // A factorization kept on the device reads and solves through the device's transfer channel,
      // as its resident matrices do (kept_factorization.h).
      cuda::TransferChannel* keep_on = nullptr;
      if (cuda::KeepsOnDevice(a, options)) {
        MATRIXD_ASSIGN_OR_RETURN(keep_on, Channel(IndexOfOrdinal(context.device())));
        MATRIXD_RETURN_IF_ERROR(context.Activate());  // making the channel may switch devices
      }
      return cuda::Factorize(a, options, rhs, context, control, keep_on);
    });
  }
  absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                    const SolveOptions& options, JobControl* control) override {
    return Timed(control, [&](cuda::DeviceContext& context) {
      return cuda::Solve(factorization, rhs, options, context, control);
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
    return Timed(control, [&](cuda::DeviceContext& context) -> absl::StatusOr<PermanentResult> {
      if (options.devices <= 1) return cuda::Permanent(a, options, context, control, state_dir_);
      // The job's context, then contexts of its own on the next devices: made for this job (not
      // lent by the other devices' DeviceStreams, so that two such jobs never wait on each
      // other), drawing on the same memory stack as the devices' other contexts.
      std::vector<std::unique_ptr<cuda::DeviceContext>> extra;
      std::vector<cuda::DeviceContext*> contexts = {&context};
      for (const auto& device : devices_) {
        if (static_cast<int>(contexts.size()) == options.devices) break;
        if (device->primary().device() == context.device()) continue;
        MATRIXD_ASSIGN_OR_RETURN(
            std::unique_ptr<cuda::DeviceContext> own,
            cuda::DeviceContext::Create(device->primary().device(), memory_limit_));
        contexts.push_back(own.get());
        extra.push_back(std::move(own));
      }
      return cuda::Permanent(a, options, contexts, control, state_dir_);
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
  uint64_t SolveDeviceBytes(const FactorizationView& factorization, const MatrixView& rhs,
                            const SolveOptions& options) const override {
    return cuda::SolveDeviceBytes(factorization, rhs, options);
  }
  uint64_t MultiplyDeviceBytes(const MatrixView& a, const MatrixView& b,
                               const MultiplyOptions& options) const override {
    return cuda::MultiplyDeviceBytes(a, b, options);
  }
  uint64_t PermanentDeviceBytes(const MatrixView& a,
                                const PermanentOptions& options) const override {
    return cuda::PermanentDeviceBytes(a, options);
  }

  std::unique_ptr<HostMemoryPin> PinHostMemory(const void* data, size_t bytes) override {
    // The runtime wants a current device for the call; portable pins serve every device.
    if (cudaSetDevice(devices_.front()->primary().device()) != cudaSuccess) return nullptr;
    std::unique_ptr<cuda::PortableHostPin> pin = cuda::PortableHostPin::Make(data, bytes);
    if (pin == nullptr) return nullptr;
    return std::make_unique<HostPin>(std::move(pin));
  }

  absl::StatusOr<std::unique_ptr<ResidentMatrix>> AllocateResident(int64_t rows, int64_t cols,
                                                                   DType dtype,
                                                                   int device_index) override {
    if (device_index < 0 || device_index >= static_cast<int>(devices_.size())) {
      device_index = MostFreeDevice();
    }
    MATRIXD_ASSIGN_OR_RETURN(cuda::TransferChannel * channel, Channel(device_index));
    absl::StatusOr<std::unique_ptr<ResidentMatrix>> matrix =
        cuda::MakeDeviceResidentMatrix(*channel, rows, cols, dtype);
    if (matrix.ok() || matrix.status().code() != absl::StatusCode::kResourceExhausted) {
      return matrix;
    }
    const DeviceMemoryUsage usage = DeviceMemory()[device_index];
    return absl::ResourceExhaustedError(
        absl::StrCat("a resident ", rows, "x", cols, " ", DTypeName(dtype), " matrix needs ",
                     static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * ElementSize(dtype),
                     " bytes; ", usage.limit - std::min(usage.used, usage.limit), " of ",
                     usage.limit, " bytes are free on ", usage.device));
  }

  absl::StatusOr<std::unique_ptr<IpcMemory>> OpenCudaIpc(std::span<const std::byte> raw_handle,
                                                         int device_id,
                                                         uint64_t byte_size) override {
    if (byte_size == 0) {
      return absl::InvalidArgumentError("byte_size is 0; want the bytes requests may use");
    }
    if (device_id < 0 || device_id >= CudaDeviceCount()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device_id is ", device_id,
                       "; want the CUDA device of the allocation (this "
                       "host has ",
                       CudaDeviceCount(), ": 0 to ", CudaDeviceCount() - 1, ")"));
    }
    // The sharing process may number its devices differently (another CUDA_VISIBLE_DEVICES):
    // open on the device of the same ordinal if this backend uses one, else on its first, then
    // ask the driver where the memory really lives and reopen there if it is elsewhere.
    int index = IndexOfOrdinal(device_id);
    MATRIXD_ASSIGN_OR_RETURN(
        cuda::IpcMapping mapping,
        cuda::IpcMapping::Open(raw_handle, devices_[index < 0 ? 0 : index]->primary().device()));
    MATRIXD_ASSIGN_OR_RETURN(cuda::IpcAllocation allocation, mapping.Allocation());
    index = IndexOfOrdinal(allocation.device);
    if (index < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device_id ", device_id, ": the allocation lives on CUDA device ", allocation.device,
          PciBusId(allocation.device), ", which this server does not use; it uses ", device_,
          " (the same GPU must be visible to the server: see CUDA_VISIBLE_DEVICES)"));
    }
    if (allocation.device != mapping.device()) {
      mapping = cuda::IpcMapping();  // closed before it is opened again
      MATRIXD_ASSIGN_OR_RETURN(mapping, cuda::IpcMapping::Open(raw_handle, allocation.device));
    }
    if (allocation.bytes != 0 && byte_size > allocation.bytes) {
      return absl::InvalidArgumentError(absl::StrCat("byte_size ", byte_size,
                                                     " is larger than the shared allocation (",
                                                     allocation.bytes, " bytes)"));
    }
    MATRIXD_ASSIGN_OR_RETURN(cuda::TransferChannel * channel, Channel(index));
    return cuda::MakeIpcMemory(std::move(mapping), byte_size, *channel);
  }

  // The float and modular determinants and the dense products read their operands only by
  // device copies (cudaMemcpyDefault; a device pointer is never staged); exact determinants and
  // block-sparse products also read them on the host.
  bool DeterminantReadsOnDevice(const MatrixView& a,
                                const DeterminantOptions& options) const override {
    return (IsFloating(a.dtype) && options.modulus == 0) ||
           (a.dtype == DType::kInt64 && options.modulus > 0);
  }
  bool MultiplyReadsOnDevice(const MatrixView& /*a*/, const MatrixView& /*b*/,
                             const MultiplyOptions& options) const override {
    return options.block_size == 0;
  }
  // Every factorization on one device copies A and the right-hand side into buffers of its own
  // there by device copies, wherever they lie, so a resident operand is read in place (a Cholesky,
  // or a batch of them, checks that it is Hermitian there: core/cuda/hermitian_device_check.h).
  bool FactorizeReadsOnDevice(const MatrixView& a, const FactorizeOptions& options,
                              const MatrixView* /*rhs*/) const override {
    return IsFloating(a.dtype) && options.devices <= 1;
  }
  bool DeterminantRunsOnHost(const MatrixView& a,
                             const DeterminantOptions& options) const override {
    return cuda::DeterminantRunsOnHost(a, options, host_max_orders_.determinant);
  }
  bool FactorizeRunsOnHost(const MatrixView& a, const FactorizeOptions& options,
                           const MatrixView* rhs) const override {
    return cuda::FactorizeRunsOnHost(a, options, rhs, host_max_orders_.factorize);
  }

  // The batched LU without a right-hand side checks its operand on the device as it uploads it
  // (factorize_batch.h). Refinement runs before the batched path and reads A on the host.
  bool FactorizeChecksFinite(const MatrixView& a, const FactorizeOptions& options,
                             const MatrixView* rhs) const override {
    return cuda::FactorizeBatchChecksFinite(a, options, rhs);
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
      MATRIXD_RETURN_IF_ERROR(context.Activate());
      // A 256 MiB copy runs for about 0.2 ms on an H100: long enough for events to time well.
      const size_t bytes =
          static_cast<size_t>(std::min<uint64_t>(uint64_t{256} << 20, context.memory_limit() / 8));
      MATRIXD_ASSIGN_OR_RETURN(double bandwidth, cuda::MeasureCopyBandwidth(context, bytes));
      bandwidths.push_back({.device = device->description(), .bytes_per_second = bandwidth});
    }
    return bandwidths;
  }

 private:
  int MostFreeDevice() const {
    const std::vector<DeviceMemoryUsage> usages = DeviceMemory();
    int best = 0;
    uint64_t best_free = 0;
    for (size_t i = 0; i < usages.size(); ++i) {
      const uint64_t free = usages[i].limit - std::min(usages[i].used, usages[i].limit);
      if (free > best_free) {
        best = static_cast<int>(i);
        best_free = free;
      }
    }
    return best;
  }

  // The index of the device with CUDA ordinal `ordinal`, or -1 when this backend does not use it.
  int IndexOfOrdinal(int ordinal) const {
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i]->primary().device() == ordinal) return static_cast<int>(i);
    }
    return -1;
  }

  // " (PCI 0000:1B:00.0)" for a device the driver knows, else "".
  static std::string PciBusId(int ordinal) {
    char id[32] = {};
    if (cudaDeviceGetPCIBusId(id, sizeof(id), ordinal) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      return "";
    }
    return absl::StrCat(" (PCI ", id, ")");
  }

  // The transfer channel of device `index`, made on first use (a stream and staging of its own on
  // the device's shared pool).
  absl::StatusOr<cuda::TransferChannel*> Channel(int index) {
    absl::MutexLock lock(&channels_mutex_);
    if (channels_[index] == nullptr) {
      const cuda::DeviceContext& primary = devices_[index]->primary();
      MATRIXD_ASSIGN_OR_RETURN(
          std::unique_ptr<cuda::DeviceContext> context,
          cuda::DeviceContext::Create(primary.device(),
                                      DeviceMemoryLimit{.bytes = primary.memory_limit()}));
      channels_[index] = std::make_unique<cuda::TransferChannel>(std::move(context), index,
                                                                 devices_[index]->description());
    }
    return channels_[index].get();
  }

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
    MATRIXD_RETURN_IF_ERROR(context.Activate());
    MATRIXD_ASSIGN_OR_RETURN(cuda::EventTimer timer, cuda::EventTimer::Create());
    MATRIXD_RETURN_IF_ERROR(timer.Start(context.stream()));
    auto result = op(context);
    if (!result.ok()) return result;
    MATRIXD_RETURN_IF_ERROR(timer.Stop(context.stream()));
    MATRIXD_ASSIGN_OR_RETURN(double seconds, timer.Seconds());
    result->stats.backend = "cuda";
    result->stats.device = device.description();
    result->stats.seconds = seconds;
    return result;
  }

  std::vector<std::unique_ptr<cuda::DeviceStreams>> devices_;
  const DeviceMemoryLimit memory_limit_;
  const std::string state_dir_;          // where long permanents checkpoint; empty = nowhere
  const HostMaxOrders host_max_orders_;  // see core/cuda/host_small_jobs.h
  // One per device, made on first use; resident matrices point to them, so every resident matrix
  // must be gone before the backend.
  absl::Mutex channels_mutex_;
  std::vector<std::unique_ptr<cuda::TransferChannel>> channels_ ABSL_GUARDED_BY(channels_mutex_);
  std::string device_;
  std::vector<std::pair<std::string, std::string>> versions_;
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
                                                         int streams_per_device,
                                                         const std::string& state_dir,
                                                         HostMaxOrders host_max_orders) {
  for (const auto& [name, order] :
       {std::pair{"host_determinant_max_order", host_max_orders.determinant},
        std::pair{"host_factorize_max_order", host_max_orders.factorize}}) {
    if (order < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " is ", order, "; want 0 (every such job on the device) or more"));
    }
  }
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
    MATRIXD_ASSIGN_OR_RETURN(
        std::unique_ptr<cuda::DeviceStreams> device,
        cuda::DeviceStreams::Create(ordinal, streams_per_device, memory_limit));
    streams.push_back(std::move(device));
  }
  return std::make_unique<CudaBackend>(std::move(streams), memory_limit, state_dir,
                                       host_max_orders);
}

}  // namespace matrixd
