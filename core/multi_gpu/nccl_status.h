// Turns NCCL return codes into absl::Status values that name the failing call, as
// core/cuda/cuda_status.h does for CUDA, cuBLAS and cuSOLVER.
#ifndef MATRIXD_CORE_MULTI_GPU_NCCL_STATUS_H_
#define MATRIXD_CORE_MULTI_GPU_NCCL_STATUS_H_

#include <nccl.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {

// OK for ncclSuccess; UNAVAILABLE otherwise (a peer, a link or the library failed), with the
// call's source text and NCCL's description.
inline absl::Status NcclStatus(ncclResult_t code, const char* call) {
  if (code == ncclSuccess) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(call, " failed: ", ncclGetErrorString(code)));
}

}  // namespace matrixd::multi_gpu

#define MATRIXD_NCCL_RETURN_IF_ERROR(expr) \
  MATRIXD_RETURN_IF_ERROR(::matrixd::multi_gpu::NcclStatus((expr), #expr))

#endif  // MATRIXD_CORE_MULTI_GPU_NCCL_STATUS_H_
