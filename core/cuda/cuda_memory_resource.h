// The CUDA end of the memory-resource stack (core/memory_resource.h): a stream-ordered pool over
// cudaMallocFromPoolAsync / cudaFreeAsync (rmm's cuda_async_memory_resource), and the stack every
// DeviceContext of a device allocates through: pool -> limit -> statistics -> retry.
#ifndef MATRIXD_CORE_CUDA_CUDA_MEMORY_RESOURCE_H_
#define MATRIXD_CORE_CUDA_CUDA_MEMORY_RESOURCE_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "core/memory_resource.h"

namespace matrixd::cuda {

// A memory pool's counters (cudaMemPoolAttrUsedMemCurrent, cudaMemPoolAttrReservedMemCurrent).
struct MemoryPoolUsage {
  uint64_t used = 0;      // allocated and not yet freed (in stream order)
  uint64_t reserved = 0;  // mapped by the pool: used plus cached for reuse
};

// Device memory of one device from a cudaMemPool_t of its own, in stream order: the MemoryStream
// of Allocate/Deallocate is a cudaStream_t. An allocation the pool cannot satisfy is
// RESOURCE_EXHAUSTED (not logged: the stack above retries it); other CUDA failures are INTERNAL and
// logged.
class CudaAsyncResource final : public MemoryResource {
 public:
  // A pool on `device` whose mapped size is capped at `max_bytes` (a multiple of 2 MiB), keeping up
  // to `max_bytes` of freed memory cached between operations. A driver older than CUDA 12.2 knows
  // no cap: the pool is then uncapped (the LimitingResource above it still holds the limit).
  // Every GPU with peer access to `device` may read and write the pool's memory (so that a job on
  // one GPU reads a resident matrix held by another).
  static absl::StatusOr<std::unique_ptr<CudaAsyncResource>> Create(int device, uint64_t max_bytes);
  ~CudaAsyncResource() override;
  CudaAsyncResource(const CudaAsyncResource&) = delete;
  CudaAsyncResource& operator=(const CudaAsyncResource&) = delete;

  cudaMemPool_t pool() const { return pool_; }
  absl::StatusOr<MemoryPoolUsage> Usage() const;
  // Waits for the work queued on `stream` (so that its stream-ordered frees are done) and gives
  // all unused memory back to the driver. Returns whether both calls succeeded.
  bool Trim(cudaStream_t stream);

 private:
  explicit CudaAsyncResource(cudaMemPool_t pool) : pool_(pool) {}
  absl::StatusOr<void*> DoAllocate(size_t bytes, MemoryStream stream) override;
  void DoDeallocate(void* data, size_t bytes, MemoryStream stream) override;

  cudaMemPool_t pool_ = nullptr;
};

// What the contexts of one device with one limit allocate through: the pool, capped at `limit`,
// under a LimitingResource of `limit`, counted by a StatisticsResource, and retried once after
// CudaAsyncResource::Trim on the allocation's stream when exhausted.
class DeviceMemoryStack {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceMemoryStack>> Create(int device, uint64_t limit);

  MemoryResource& resource() { return retry_; }
  CudaAsyncResource& pool() { return *pool_; }
  const CudaAsyncResource& pool() const { return *pool_; }
  uint64_t limit() const { return limit_.limit(); }
  MemoryStatistics statistics() const { return statistics_.statistics(); }

 private:
  DeviceMemoryStack(std::unique_ptr<CudaAsyncResource> pool, uint64_t limit);

  std::unique_ptr<CudaAsyncResource> pool_;
  LimitingResource limit_;
  StatisticsResource statistics_;
  RetryOnExhaustionResource retry_;
};

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_CUDA_MEMORY_RESOURCE_H_
