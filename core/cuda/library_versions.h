// The device, driver and library versions the CUDA backend computes with, for the provenance of
// its answers (Backend::Versions).
#ifndef MATRIXD_CORE_CUDA_LIBRARY_VERSIONS_H_
#define MATRIXD_CORE_CUDA_LIBRARY_VERSIONS_H_

#include <cuda_runtime.h>

#include <string>
#include <utility>
#include <vector>

namespace matrixd::cuda {

// ("device_model", properties.name), ("compute_capability", "9.0"), ("driver", the CUDA version
// the driver supports, "12.8"), ("cuda_runtime", "13.0"), ("cublas", "13.0.0"), ("cusolver",
// ...), then the CPU libraries (core/cpu/library_versions.h), which some paths also use. A
// version the library does not report reads "unknown".
std::vector<std::pair<std::string, std::string>> CudaLibraryVersions(
    const cudaDeviceProp& properties);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_LIBRARY_VERSIONS_H_
