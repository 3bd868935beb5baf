#include "core/cuda/cuda_status.h"

#include <iostream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/cuda/fault_injection.h"

namespace matrixd::cuda {
namespace {

// The call as the message shows it: "cudaMallocAsync(...)" rather than the whole argument list,
// and "<kernel> launch" for the MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR form
// "(static_cast<void>(<kernel>), cudaGetLastError())".
std::string CallName(absl::string_view call) {
  constexpr absl::string_view kLaunchPrefix = "(static_cast<void>(";
  if (call.substr(0, kLaunchPrefix.size()) == kLaunchPrefix) {
    absl::string_view kernel = call.substr(kLaunchPrefix.size());
    kernel = kernel.substr(0, kernel.find(')'));
    return absl::StrCat(kernel, " launch");
  }
  const size_t paren = call.find('(');
  if (paren == absl::string_view::npos || paren == 0) return std::string(call);
  return absl::StrCat(call.substr(0, paren), "(...)");
}

// A check of a kernel launch: MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR's form, or a launcher's
// cudaError_t (launchers are named Launch<Kernel>, docs: style.md).
bool IsKernelLaunch(absl::string_view call) {
  return absl::StartsWith(call, "(static_cast<void>(") || absl::StartsWith(call, "Launch");
}

// Whether an injected failure of `point` happens at this successful call (fault_injection.h).
bool InjectedHere(FaultPoint point) {
  FaultCountdown& countdown = InjectedFault(point);
  return countdown.armed() && countdown.Fire();
}

absl::string_view CusolverStatusName(cusolverStatus_t code) {
  switch (code) {
    case CUSOLVER_STATUS_SUCCESS:
      return "CUSOLVER_STATUS_SUCCESS";
    case CUSOLVER_STATUS_NOT_INITIALIZED:
      return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED:
      return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE:
      return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH:
      return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_MAPPING_ERROR:
      return "CUSOLVER_STATUS_MAPPING_ERROR";
    case CUSOLVER_STATUS_EXECUTION_FAILED:
      return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR:
      return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED:
      return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case CUSOLVER_STATUS_NOT_SUPPORTED:
      return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_ZERO_PIVOT:
      return "CUSOLVER_STATUS_ZERO_PIVOT";
    case CUSOLVER_STATUS_INVALID_LICENSE:
      return "CUSOLVER_STATUS_INVALID_LICENSE";
    case CUSOLVER_STATUS_INVALID_WORKSPACE:
      return "CUSOLVER_STATUS_INVALID_WORKSPACE";
    default:
      return "CUSOLVER_STATUS_(other)";
  }
}

absl::Status Failure(bool out_of_memory, absl::string_view call, absl::string_view name,
                     absl::string_view description, int code, CallSite site) {
  std::string message = absl::StrCat(CallName(call), " failed: ", name);
  if (!description.empty()) absl::StrAppend(&message, ": ", description);
  absl::StrAppend(&message, " (code ", code, ")");
  absl::Status status =
      out_of_memory ? absl::ResourceExhaustedError(message) : absl::InternalError(message);
  LogCudaFailure(site, status);
  return status;
}

}  // namespace

void LogCudaFailure(CallSite site, const absl::Status& status) {
  if (site.file == nullptr) return;
  // __FILE__ is the compiler's path; from "core/" on it is the same on every machine.
  absl::string_view file = site.file;
  if (const size_t core = file.rfind("core/"); core != absl::string_view::npos) {
    file.remove_prefix(core);
  }
  // One write per line, so that lines of concurrent workers do not interleave.
  std::cerr << absl::StrCat("matrixd: ", file, ":", site.line, ": ", status.ToString(), "\n");
}

absl::Status ToStatus(cudaError_t code, const char* call, CallSite site) {
  if (code == cudaSuccess) {
    if (!InjectedFault(FaultPoint::kKernelLaunch).armed() || !IsKernelLaunch(call) ||
        !InjectedHere(FaultPoint::kKernelLaunch)) {
      return absl::OkStatus();
    }
    constexpr cudaError_t kInjected = cudaErrorLaunchOutOfResources;
    return Failure(false, call, cudaGetErrorName(kInjected),
                   absl::StrCat(cudaGetErrorString(kInjected), " ", kInjectedFaultNote),
                   static_cast<int>(kInjected), site);
  }
  // A failed runtime call also becomes the thread's "last error"; clear it so that the next
  // launch check does not report this failure a second time. Sticky errors (a corrupted context)
  // stay, as they should.
  static_cast<void>(cudaGetLastError());
  return Failure(code == cudaErrorMemoryAllocation, call, cudaGetErrorName(code),
                 cudaGetErrorString(code), static_cast<int>(code), site);
}

absl::Status ToStatus(cublasStatus_t code, const char* call, CallSite site) {
  if (code == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return Failure(code == CUBLAS_STATUS_ALLOC_FAILED, call, cublasGetStatusName(code),
                 cublasGetStatusString(code), static_cast<int>(code), site);
}

absl::Status ToStatus(cusolverStatus_t code, const char* call, CallSite site) {
  if (code == CUSOLVER_STATUS_SUCCESS) {
    if (!InjectedHere(FaultPoint::kCusolverCall)) return absl::OkStatus();
    constexpr cusolverStatus_t kInjected = CUSOLVER_STATUS_EXECUTION_FAILED;
    return Failure(false, call, CusolverStatusName(kInjected), kInjectedFaultNote,
                   static_cast<int>(kInjected), site);
  }
  return Failure(code == CUSOLVER_STATUS_ALLOC_FAILED, call, CusolverStatusName(code), "",
                 static_cast<int>(code), site);
}

absl::Status ToStatus(cusparseStatus_t code, const char* call, CallSite site) {
  if (code == CUSPARSE_STATUS_SUCCESS) return absl::OkStatus();
  return Failure(code == CUSPARSE_STATUS_ALLOC_FAILED, call, cusparseGetErrorName(code),
                 cusparseGetErrorString(code), static_cast<int>(code), site);
}

}  // namespace matrixd::cuda
