// The memory resource of one device for work outside a DeviceContext (the multi-GPU product):
// the same shared stack (pool -> limit -> statistics -> retry, cuda_memory_resource.h) that every
// DeviceContext of that device and limit allocates through, so that what such work allocates
// counts against the same cap and statistics.
#ifndef MATRIXD_CORE_CUDA_DEVICE_MEMORY_RESOURCE_H_
#define MATRIXD_CORE_CUDA_DEVICE_MEMORY_RESOURCE_H_

#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/memory_resource.h"

namespace matrixd::cuda {

// The resource of `device` under `memory_limit` (as DeviceContext::Create resolves it); allocate
// from it on a stream of `device`. Lives as long as the process. INVALID_ARGUMENT for a limit
// Create rejects; UNAVAILABLE if the device cannot be used.
absl::StatusOr<MemoryResource*> DeviceMemoryResource(int device,
                                                     const DeviceMemoryLimit& memory_limit = {});

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_DEVICE_MEMORY_RESOURCE_H_
