// Turns CUDA runtime, cuBLAS, cuSOLVER and cuSPARSE return codes into absl::Status values that name
// the failing call. Every CUDA call in core/cuda goes through MATRIXD_CUDA_RETURN_IF_ERROR.
#ifndef MATRIXD_CORE_CUDA_CUDA_STATUS_H_
#define MATRIXD_CORE_CUDA_CUDA_STATUS_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include "absl/status/status.h"

namespace matrixd::cuda {

// OK for success; RESOURCE_EXHAUSTED for out-of-memory; INTERNAL otherwise. `call` is the source
// text of the call, e.g. "cudaMemcpyAsync(...)".
absl::Status ToStatus(cudaError_t code, const char* call);
absl::Status ToStatus(cublasStatus_t code, const char* call);
absl::Status ToStatus(cusolverStatus_t code, const char* call);
absl::Status ToStatus(cusparseStatus_t code, const char* call);

}  // namespace matrixd::cuda

#define MATRIXD_CUDA_RETURN_IF_ERROR(expr)                                           \
  do {                                                                               \
    if (absl::Status matrixd_cuda_status = ::matrixd::cuda::ToStatus((expr), #expr); \
        !matrixd_cuda_status.ok()) {                                                 \
      return matrixd_cuda_status;                                                    \
    }                                                                                \
  } while (0)

// Checks the last kernel launch.
#define MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(kernel_name) \
  MATRIXD_CUDA_RETURN_IF_ERROR((static_cast<void>(kernel_name), cudaGetLastError()))

#endif  // MATRIXD_CORE_CUDA_CUDA_STATUS_H_
