#include "core/cuda/device_context.h"

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/device_memory_resource.h"

namespace matrixd::cuda {
namespace {

// Prefixes a failure with what was being done, keeping its code.
absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

// Pools are mapped in units of the allocation granularity, 2 MiB on current GPUs.
constexpr uint64_t kPoolGranularity = uint64_t{2} << 20;

absl::StatusOr<uint64_t> ResolveLimit(const DeviceMemoryLimit& limit, uint64_t total) {
  uint64_t bytes = limit.bytes;
  if (bytes == 0) {
    if (!(limit.fraction > 0.0 && limit.fraction <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("device memory limit: fraction ", limit.fraction, " is not in (0, 1]"));
    }
    bytes = static_cast<uint64_t>(limit.fraction * static_cast<double>(total));
  }
  bytes -= bytes % kPoolGranularity;
  if (bytes == 0) {
    return absl::InvalidArgumentError("device memory limit: below the 2 MiB pool granularity");
  }
  return bytes;
}

// One memory stack per (device, limit) for the life of the process: every context of a device
// shares it, so its cap bounds their allocations together, and memory freed by one operation is
// reused by the next without a driver call.
absl::StatusOr<DeviceMemoryStack*> SharedMemoryStack(int device, uint64_t limit) {
  ABSL_CONST_INIT static absl::Mutex mutex(absl::kConstInit);
  static auto* const stacks =
      new std::map<std::pair<int, uint64_t>, std::unique_ptr<DeviceMemoryStack>>();
  absl::MutexLock lock(&mutex);
  if (const auto it = stacks->find({device, limit}); it != stacks->end()) return it->second.get();
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<DeviceMemoryStack> stack,
                           DeviceMemoryStack::Create(device, limit));
  DeviceMemoryStack* const shared = stack.get();
  stacks->emplace(std::make_pair(device, limit), std::move(stack));
  return shared;
}

}  // namespace

absl::StatusOr<MemoryResource*> DeviceMemoryResource(int device,
                                                     const DeviceMemoryLimit& memory_limit) {
  cudaDeviceProp properties{};
  absl::Status status = MATRIXD_CUDA_STATUS(cudaGetDeviceProperties(&properties, device));
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("CUDA device ", device, " cannot be used: ", status.message()));
  }
  MATRIXD_ASSIGN_OR_RETURN(uint64_t limit, ResolveLimit(memory_limit, properties.totalGlobalMem));
  absl::StatusOr<DeviceMemoryStack*> stack = SharedMemoryStack(device, limit);
  if (!stack.ok()) {
    return absl::UnavailableError(
        absl::StrCat("CUDA device ", device, " cannot be used: ", stack.status().message()));
  }
  return &(*stack)->resource();
}

// ---- EventTimer ----

absl::StatusOr<EventTimer> EventTimer::Create() {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  if (absl::Status status = MATRIXD_CUDA_STATUS(cudaEventCreate(&stop)); !status.ok()) {
    static_cast<void>(cudaEventDestroy(start));
    return status;
  }
  return EventTimer(start, stop);
}

EventTimer::EventTimer(EventTimer&& other) noexcept
    : start_(std::exchange(other.start_, nullptr)), stop_(std::exchange(other.stop_, nullptr)) {}

EventTimer::~EventTimer() {
  if (start_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaEventDestroy(start_));
  if (stop_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaEventDestroy(stop_));
}

absl::Status EventTimer::Start(cudaStream_t stream) {
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(start_, stream));
  return absl::OkStatus();
}

absl::Status EventTimer::Stop(cudaStream_t stream) {
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop_, stream));
  return absl::OkStatus();
}

absl::StatusOr<double> EventTimer::Seconds() {
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop_));
  float milliseconds = 0.0f;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&milliseconds, start_, stop_));
  return milliseconds * 1e-3;
}

// ---- DeviceContext ----

absl::StatusOr<std::unique_ptr<DeviceContext>> DeviceContext::Create(
    int device, const DeviceMemoryLimit& memory_limit) {
  // The destructor releases whatever was created before a failure.
  std::unique_ptr<DeviceContext> context(new DeviceContext());
  context->device_ = device;
  absl::Status status = [&]() -> absl::Status {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&context->properties_, device));
    // Non-blocking: the legacy default stream, which other code in the process may use, must not
    // serialise with ours.
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaStreamCreateWithFlags(&context->stream_, cudaStreamNonBlocking));
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasCreate(&context->cublas_));
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetStream(context->cublas_, context->stream_));
    MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnCreate(&context->cusolver_));
    MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnSetStream(context->cusolver_, context->stream_));
    // Repeatable results (docs/accuracy.md, "Bit-identical repeats"): no atomics in cuBLAS's
    // reductions and cuSOLVER's deterministic algorithms. Both are the libraries' defaults today;
    // set here so that the promise does not hang on a default.
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cublasSetAtomicsMode(context->cublas_, CUBLAS_ATOMICS_NOT_ALLOWED));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cusolverDnSetDeterministicMode(context->cusolver_, CUSOLVER_DETERMINISTIC_RESULTS));
    MATRIXD_CUDA_RETURN_IF_ERROR(cusparseCreate(&context->cusparse_));
    MATRIXD_CUDA_RETURN_IF_ERROR(cusparseSetStream(context->cusparse_, context->stream_));
    MATRIXD_ASSIGN_OR_RETURN(uint64_t limit,
                             ResolveLimit(memory_limit, context->properties_.totalGlobalMem));
    MATRIXD_ASSIGN_OR_RETURN(context->memory_, SharedMemoryStack(device, limit));
    // Without staging chunks, large pageable copies are merely slower.
    absl::StatusOr<std::unique_ptr<PinnedStaging>> staging =
        PinnedStaging::Create(context->stream_);
    if (staging.ok()) context->staging_ = *std::move(staging);
    return absl::OkStatus();
  }();
  if (status.code() == absl::StatusCode::kInvalidArgument) return status;
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("CUDA device ", device, " cannot be used: ", status.message()));
  }
  return context;
}

DeviceContext::~DeviceContext() {
  // Nothing else exists without the stream (Create makes it first); a device that cannot be used
  // is not an error to report again here.
  if (stream_ == nullptr) return;
  // Reverse order of creation; queued work (and stream-ordered frees) finish first.
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaSetDevice(device_));
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaStreamSynchronize(stream_));
  staging_.reset();
  side_lane_.reset();
  if (cusparse_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cusparseDestroy(cusparse_));
  if (cusolver_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cusolverDnDestroy(cusolver_));
  if (cublas_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cublasDestroy(cublas_));
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaStreamDestroy(stream_));
}

absl::StatusOr<SideLane*> DeviceContext::side_lane() {
  if (side_lane_ == nullptr) {
    MATRIXD_ASSIGN_OR_RETURN(side_lane_, SideLane::Create());
  }
  return side_lane_.get();
}

absl::Status DeviceContext::Activate() const {
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return absl::OkStatus();
}

absl::StatusOr<DeviceBuffer> DeviceContext::Allocate(size_t bytes) {
  if (bytes == 0) return DeviceBuffer();
  MemoryResource& resource = memory_resource();
  absl::StatusOr<void*> data = resource.Allocate(bytes, stream_);
  if (!data.ok()) {
    return Annotate(data.status(),
                    absl::StrCat("allocating ", bytes, " bytes on CUDA device ", device_));
  }
  return DeviceBuffer(&resource, *data, bytes, stream_);
}

bool DeviceContext::UseStaging(const void* host, size_t bytes) const {
  if (staging_ == nullptr || bytes < kStagingFromBytes) return false;
  // Page-locked (allocated pinned or registered) memory is copied directly by the copy engine.
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return true;
  }
  return attributes.type == cudaMemoryTypeUnregistered;
}

absl::Status DeviceContext::Upload(const void* host, DeviceBuffer& device, size_t bytes) {
  if (bytes > device.bytes()) {
    return absl::InternalError(absl::StrCat("Upload of ", bytes, " bytes into a device buffer of ",
                                            device.bytes(), " bytes"));
  }
  if (bytes == 0) return absl::OkStatus();
  if (UseStaging(host, bytes)) return staging_->Upload(host, device.data(), bytes);
  // cudaMemcpyDefault: `host` may also be device memory (a resident matrix's device view).
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(device.data(), host, bytes, cudaMemcpyDefault, stream_));
  return absl::OkStatus();
}

absl::Status DeviceContext::StagedUpload(const void* host, void* device, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  if (staging_ != nullptr && UseStaging(host, kStagingFromBytes)) {
    return staging_->Upload(host, device, bytes);
  }
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(device, host, bytes, cudaMemcpyDefault, stream_));
  return absl::OkStatus();
}

absl::Status DeviceContext::Download(const DeviceBuffer& device, void* host, size_t bytes) {
  if (bytes > device.bytes()) {
    return absl::InternalError(absl::StrCat(
        "Download of ", bytes, " bytes from a device buffer of ", device.bytes(), " bytes"));
  }
  if (bytes == 0) return absl::OkStatus();
  if (UseStaging(host, bytes)) return staging_->Download(device.data(), host, bytes);
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host, device.data(), bytes, cudaMemcpyDeviceToHost, stream_));
  // The caller reads `host` next: the copy must have landed, pinned or not.
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status DeviceContext::Synchronize() {
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

bool DeviceContext::OnThisDevice(const void* data) const {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // an unknown pointer is an answer, not an error
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice && attributes.device == device();
}

}  // namespace matrixd::cuda
