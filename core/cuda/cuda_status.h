// Turns CUDA runtime, cuBLAS, cuSOLVER and cuSPARSE return codes into absl::Status values that name
// the failing call. Every CUDA call in core/cuda goes through MATRIXD_CUDA_RETURN_IF_ERROR (or,
// in a destructor, MATRIXD_ASSERT_CUDA_SUCCESS), which also logs a failure on the server's stderr
// with the file and line of the call, as rmm's RMM_CUDA_TRY and ggml's CUDA_CHECK record them; the
// returned status carries only the call and the error, a message fit for clients.
#ifndef MATRIXD_CORE_CUDA_CUDA_STATUS_H_
#define MATRIXD_CORE_CUDA_CUDA_STATUS_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include <cassert>

#include "absl/status/status.h"
#include "core/status_macros.h"

namespace matrixd::cuda {

// Where a CUDA call was made, for the server's log; a null `file` logs nothing.
struct CallSite {
  const char* file = nullptr;
  int line = 0;
};

// OK for success; RESOURCE_EXHAUSTED for out-of-memory; INTERNAL otherwise. `call` is the source
// text of the call, e.g. "cudaMemcpyAsync(...)". A failure is logged with `site` when it has one.
absl::Status ToStatus(cudaError_t code, const char* call, CallSite site = {});
absl::Status ToStatus(cublasStatus_t code, const char* call, CallSite site = {});
absl::Status ToStatus(cusolverStatus_t code, const char* call, CallSite site = {});
absl::Status ToStatus(cusparseStatus_t code, const char* call, CallSite site = {});

// Writes "matrixd: <file>:<line>: <status>" to stderr as one line (the file from core/ on); does
// nothing for a site without a file.
void LogCudaFailure(CallSite site, const absl::Status& status);

namespace internal {

// What MATRIXD_ASSERT_CUDA_SUCCESS does: logs a failure, then asserts (debug builds only).
template <typename Code>
void AssertCudaSuccess(Code code, const char* call, CallSite site) {
  [[maybe_unused]] const bool ok = ToStatus(code, call, site).ok();
  assert(ok && "a CUDA call in a destructor failed; see the line logged above");
}

}  // namespace internal
}  // namespace matrixd::cuda

#define MATRIXD_CUDA_CALL_SITE (::matrixd::cuda::CallSite{__FILE__, __LINE__})

// The status of a CUDA/cuBLAS/cuSOLVER/cuSPARSE call, logged with file and line when it failed.
#define MATRIXD_CUDA_STATUS(expr) ::matrixd::cuda::ToStatus((expr), #expr, MATRIXD_CUDA_CALL_SITE)

// Returns the status of a CUDA call when it failed.
#define MATRIXD_CUDA_RETURN_IF_ERROR(expr) MATRIXD_RETURN_IF_ERROR(MATRIXD_CUDA_STATUS(expr))

// Checks the last kernel launch.
#define MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(kernel_name) \
  MATRIXD_CUDA_RETURN_IF_ERROR((static_cast<void>(kernel_name), cudaGetLastError()))

// For destructors and other places that cannot return a status: a failed call is logged with file
// and line, and asserts in debug builds (NDEBUG off) instead of being dropped silently.
#define MATRIXD_ASSERT_CUDA_SUCCESS(expr)                                                \
  do {                                                                                   \
    ::matrixd::cuda::internal::AssertCudaSuccess((expr), #expr, MATRIXD_CUDA_CALL_SITE); \
  } while (0)

#endif  // MATRIXD_CORE_CUDA_CUDA_STATUS_H_
