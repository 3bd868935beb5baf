#include "core/cuda/device_context.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"

namespace matrixd::cuda {
namespace {

// Prefixes a failure with what was being done, keeping its code.
absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

}  // namespace

// ---- DeviceBuffer ----

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void DeviceBuffer::Reset() {
  if (data_ != nullptr) {
    // Stream-ordered: the memory returns to the pool once the work queued before it is done, so a
    // buffer may go out of scope while kernels that use it are still running. A failure here can
    // only come from a context that is already broken; the next checked call reports it.
    static_cast<void>(cudaFreeAsync(data_, stream_));
  }
  data_ = nullptr;
  bytes_ = 0;
  stream_ = nullptr;
}

// ---- EventTimer ----

absl::StatusOr<EventTimer> EventTimer::Create() {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  if (absl::Status status = ToStatus(cudaEventCreate(&stop), "cudaEventCreate(&stop)");
      !status.ok()) {
    static_cast<void>(cudaEventDestroy(start));
    return status;
  }
  return EventTimer(start, stop);
}

EventTimer::EventTimer(EventTimer&& other) noexcept
    : start_(std::exchange(other.start_, nullptr)), stop_(std::exchange(other.stop_, nullptr)) {}

EventTimer::~EventTimer() {
  if (start_ != nullptr) static_cast<void>(cudaEventDestroy(start_));
  if (stop_ != nullptr) static_cast<void>(cudaEventDestroy(stop_));
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

absl::StatusOr<std::unique_ptr<DeviceContext>> DeviceContext::Create(int device) {
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
    MATRIXD_CUDA_RETURN_IF_ERROR(cusparseCreate(&context->cusparse_));
    MATRIXD_CUDA_RETURN_IF_ERROR(cusparseSetStream(context->cusparse_, context->stream_));
    // Keep freed memory cached in the pool instead of returning it to the driver at every
    // synchronisation (the default threshold is 0): repeated operations of one size then allocate
    // without a driver call. Allocate() trims the pool when an allocation does not fit.
    cudaMemPool_t pool = nullptr;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaDeviceGetDefaultMemPool(&pool, device));
    uint64_t threshold = std::numeric_limits<uint64_t>::max();
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    return absl::OkStatus();
  }();
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("CUDA device ", device, " cannot be used: ", status.message()));
  }
  return context;
}

DeviceContext::~DeviceContext() {
  // Reverse order of creation; queued work (and stream-ordered frees) finish first.
  static_cast<void>(cudaSetDevice(device_));
  if (stream_ != nullptr) static_cast<void>(cudaStreamSynchronize(stream_));
  if (cusparse_ != nullptr) static_cast<void>(cusparseDestroy(cusparse_));
  if (cusolver_ != nullptr) static_cast<void>(cusolverDnDestroy(cusolver_));
  if (cublas_ != nullptr) static_cast<void>(cublasDestroy(cublas_));
  if (stream_ != nullptr) static_cast<void>(cudaStreamDestroy(stream_));
}

absl::Status DeviceContext::Activate() const {
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return absl::OkStatus();
}

absl::StatusOr<DeviceBuffer> DeviceContext::Allocate(size_t bytes) {
  if (bytes == 0) return DeviceBuffer();
  void* data = nullptr;
  cudaError_t code = cudaMallocAsync(&data, bytes, stream_);
  if (code == cudaErrorMemoryAllocation) {
    // The pool may hold enough freed memory in blocks of other sizes: wait for pending frees,
    // give all unused memory back to the driver, and try once more.
    static_cast<void>(cudaGetLastError());
    cudaMemPool_t pool = nullptr;
    if (cudaStreamSynchronize(stream_) == cudaSuccess &&
        cudaDeviceGetDefaultMemPool(&pool, device_) == cudaSuccess &&
        cudaMemPoolTrimTo(pool, 0) == cudaSuccess) {
      code = cudaMallocAsync(&data, bytes, stream_);
    }
  }
  if (absl::Status status = ToStatus(code, "cudaMallocAsync(...)"); !status.ok()) {
    return Annotate(status, absl::StrCat("allocating ", bytes, " bytes on CUDA device ", device_));
  }
  return DeviceBuffer(data, bytes, stream_);
}

absl::Status DeviceContext::Upload(const void* host, DeviceBuffer& device, size_t bytes) {
  if (bytes > device.bytes()) {
    return absl::InternalError(absl::StrCat("Upload of ", bytes, " bytes into a device buffer of ",
                                            device.bytes(), " bytes"));
  }
  if (bytes == 0) return absl::OkStatus();
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(device.data(), host, bytes, cudaMemcpyHostToDevice, stream_));
  return absl::OkStatus();
}

absl::Status DeviceContext::Download(const DeviceBuffer& device, void* host, size_t bytes) {
  if (bytes > device.bytes()) {
    return absl::InternalError(absl::StrCat(
        "Download of ", bytes, " bytes from a device buffer of ", device.bytes(), " bytes"));
  }
  if (bytes == 0) return absl::OkStatus();
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

}  // namespace matrixd::cuda
