#include "core/cuda/cuda_memory_resource.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/fault_injection.h"
#include "core/status_macros.h"

namespace matrixd::cuda {
namespace {

// Whether this thread's last pool allocation failed by an injected fault: the stack's retry then
// has nothing to reclaim (the fault stands for a device that is really full).
thread_local bool last_allocation_injected = false;

// Lets every GPU that can reach `device` by peer access read and write the memory of `pool`.
// Memory of a stream-ordered pool is otherwise accessible from its own GPU only: a job on one GPU
// could not read a resident matrix held by another (a copy between them fails with
// cudaErrorInvalidValue), which a job with operands on two GPUs needs.
absl::Status GrantPeerAccess(cudaMemPool_t pool, int device) {
  int count = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
  std::vector<cudaMemAccessDesc> access;
  for (int peer = 0; peer < count; ++peer) {
    int can_access = 0;
    if (peer == device) continue;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaDeviceCanAccessPeer(&can_access, peer, device));
    if (can_access == 0) continue;
    cudaMemAccessDesc desc{};
    desc.location.type = cudaMemLocationTypeDevice;
    desc.location.id = peer;
    desc.flags = cudaMemAccessFlagsProtReadWrite;
    access.push_back(desc);
  }
  if (access.empty()) return absl::OkStatus();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemPoolSetAccess(pool, access.data(), access.size()));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaAsyncResource>> CudaAsyncResource::Create(int device,
                                                                             uint64_t max_bytes) {
  cudaMemPoolProps properties{};
  properties.allocType = cudaMemAllocationTypePinned;
  properties.handleTypes = cudaMemHandleTypeNone;
  properties.location.type = cudaMemLocationTypeDevice;
  properties.location.id = device;
  properties.maxSize = max_bytes;
  cudaMemPool_t pool = nullptr;
  cudaError_t code = cudaMemPoolCreate(&pool, &properties);
  if (code == cudaErrorInvalidValue || code == cudaErrorNotSupported) {
    static_cast<void>(cudaGetLastError());
    properties.maxSize = 0;
    code = cudaMemPoolCreate(&pool, &properties);
  }
  MATRIXD_CUDA_RETURN_IF_ERROR(code);
  // Owned from here: the destructor destroys the pool on failure below.
  std::unique_ptr<CudaAsyncResource> resource(new CudaAsyncResource(pool));
  // Keep freed memory cached up to the cap instead of returning it to the driver at every
  // synchronisation (the default threshold is 0): repeated operations of one size then allocate
  // without a driver call. Trim() gives the cache back when an allocation does not fit.
  uint64_t threshold = max_bytes;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  MATRIXD_RETURN_IF_ERROR(GrantPeerAccess(pool, device));
  return resource;
}

CudaAsyncResource::~CudaAsyncResource() {
  if (pool_ != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaMemPoolDestroy(pool_));
}

absl::StatusOr<MemoryPoolUsage> CudaAsyncResource::Usage() const {
  MemoryPoolUsage usage;
  uint64_t value = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &value));
  usage.used = value;
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &value));
  usage.reserved = value;
  return usage;
}

bool CudaAsyncResource::Trim(cudaStream_t stream) {
  return MATRIXD_CUDA_STATUS(cudaStreamSynchronize(stream)).ok() &&
         MATRIXD_CUDA_STATUS(cudaMemPoolTrimTo(pool_, 0)).ok();
}

absl::StatusOr<void*> CudaAsyncResource::DoAllocate(size_t bytes, MemoryStream stream) {
  FaultCountdown& fault = InjectedFault(FaultPoint::kDeviceAllocation);
  last_allocation_injected = fault.armed() && fault.Fire();
  if (last_allocation_injected) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cudaMallocFromPoolAsync(...) failed: cudaErrorMemoryAllocation: out of memory ",
        kInjectedFaultNote, " (", bytes, " bytes)"));
  }
  void* data = nullptr;
  const cudaError_t code =
      cudaMallocFromPoolAsync(&data, bytes, pool_, static_cast<cudaStream_t>(stream));
  // Out of memory is an answer, not a fault: no log line for it.
  const CallSite site = code == cudaErrorMemoryAllocation ? CallSite{} : MATRIXD_CUDA_CALL_SITE;
  MATRIXD_RETURN_IF_ERROR(ToStatus(code, "cudaMallocFromPoolAsync(...)", site));
  return data;
}

void CudaAsyncResource::DoDeallocate(void* data, size_t, MemoryStream stream) {
  // Stream-ordered: the memory returns to the pool once the work queued before it is done, so a
  // buffer may be given back while kernels that use it are still running.
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaFreeAsync(data, static_cast<cudaStream_t>(stream)));
}

// ---- DeviceMemoryStack ----

absl::StatusOr<std::unique_ptr<DeviceMemoryStack>> DeviceMemoryStack::Create(int device,
                                                                             uint64_t limit) {
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<CudaAsyncResource> pool,
                           CudaAsyncResource::Create(device, limit));
  return std::unique_ptr<DeviceMemoryStack>(new DeviceMemoryStack(std::move(pool), limit));
}

DeviceMemoryStack::DeviceMemoryStack(std::unique_ptr<CudaAsyncResource> pool, uint64_t limit)
    : pool_(std::move(pool)),
      limit_(pool_.get(), limit),
      statistics_(&limit_),
      // The pool may hold enough freed memory in blocks of other sizes, or frees still pending on
      // the stream: wait for them, give all unused memory back to the driver, and try once more.
      retry_(&statistics_, [pool = pool_.get()](size_t, MemoryStream stream) {
        if (last_allocation_injected) return false;
        return pool->Trim(static_cast<cudaStream_t>(stream));
      }) {}

}  // namespace matrixd::cuda
