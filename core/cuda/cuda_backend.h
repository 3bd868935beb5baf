// The CUDA backend: cuSOLVER/cuBLAS/cuSPARSE for dense algebra, our own kernels for condensation,
// modular LU, block-sparse products and permanents. Matrices stay on the device between the steps
// of one operation. Host code only: nothing here includes a CUDA header.
#ifndef MATRIXD_CORE_CUDA_CUDA_BACKEND_H_
#define MATRIXD_CORE_CUDA_CUDA_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/make_backend.h"

namespace matrixd {

// Number of usable CUDA devices; 0 when there is no driver or no device (never an error).
int CudaDeviceCount();

// A backend on the given device ordinals (empty = every visible device), each allocating from a
// pool capped at `memory_limit` and running up to `streams_per_device` operations at once, each on
// its own stream. An operation runs on one device: the one its JobControl names, else the least
// busy. UNAVAILABLE when no device is usable, INVALID_ARGUMENT for an ordinal that does not exist,
// a bad limit or streams_per_device < 1. A state_dir makes long permanents checkpoint there
// (cuda::Permanent). Determinants and factorizations of one matrix of order up to
// host_max_orders' from host memory run on the host CPU (core/cuda/host_small_jobs.h; 0: none),
// INVALID_ARGUMENT naming the field when one is negative.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const std::vector<int>& devices,
                                                         const DeviceMemoryLimit& memory_limit = {},
                                                         int streams_per_device = 1,
                                                         const std::string& state_dir = {},
                                                         HostMaxOrders host_max_orders = {});

}  // namespace matrixd

#endif  // MATRIXD_CORE_CUDA_CUDA_BACKEND_H_
