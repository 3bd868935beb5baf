#include "tests/multi_gpu/single_gpu_lu.h"

#include <cusolverDn.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/multi_gpu/device_allocation.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

struct CusolverDnHandle {
  cusolverDnHandle_t handle = nullptr;
  ~CusolverDnHandle() {
    if (handle != nullptr) cusolverDnDestroy(handle);
  }
};
struct CusolverDnParams {
  cusolverDnParams_t params = nullptr;
  ~CusolverDnParams() {
    if (params != nullptr) cusolverDnDestroyParams(params);
  }
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

absl::Status SingleGpuLu(
    int64_t n, cuda::GeneratedMatrix matrix, uint64_t seed, cudaStream_t stream, int runs,
    const std::function<void(int, double, const DistributedDeterminant&)>& on_run) {
  int device = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  MATRIXD_ASSIGN_OR_RETURN(auto a,
                           DeviceAllocation<double>::Allocate(device, static_cast<size_t>(n * n)));
  MATRIXD_ASSIGN_OR_RETURN(auto pivots,
                           DeviceAllocation<int64_t>::Allocate(device, static_cast<size_t>(n)));
  MATRIXD_ASSIGN_OR_RETURN(auto info, DeviceAllocation<int>::Allocate(device, 1));
  MATRIXD_ASSIGN_OR_RETURN(
      auto summary, DeviceAllocation<double>::Allocate(device, cuda::kDiagonalSummaryFields));
  const cuda::BlockCyclicPart whole{
      .rows = n, .cols = n, .block = n, .local_rows = n, .local_cols = n, .ld = n};
  CusolverDnHandle cusolver;
  CusolverDnParams params;
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnCreate(&cusolver.handle));
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnSetStream(cusolver.handle, stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnCreateParams(&params.params));
  size_t device_bytes = 0;
  size_t host_bytes = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnXgetrf_bufferSize(cusolver.handle, params.params, n, n,
                                                           CUDA_R_64F, a.get(), n, CUDA_R_64F,
                                                           &device_bytes, &host_bytes));
  MATRIXD_ASSIGN_OR_RETURN(auto device_work,
                           DeviceAllocation<unsigned char>::Allocate(device, device_bytes));
  std::vector<unsigned char> host_work(std::max<size_t>(host_bytes, 1));
  std::vector<int64_t> host_pivots(static_cast<size_t>(n));
  for (int run = 0; run < runs; ++run) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchGenerate(whole, matrix, seed, a.get(), stream));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    const double start = Now();
    MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnXgetrf(
        cusolver.handle, params.params, n, n, CUDA_R_64F, a.get(), n, pivots.get(), CUDA_R_64F,
        device_work.get(), device_bytes, host_work.data(), host_bytes, info.get()));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    const double seconds = Now() - start;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(summary.get(), 0, summary.bytes(), stream));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cuda::LaunchDiagonalSummary(whole, a.get(), summary.get(), stream));
    double diagonal[cuda::kDiagonalSummaryFields];
    int host_info = 0;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_pivots.data(), pivots.get(),
                                                 host_pivots.size() * sizeof(int64_t),
                                                 cudaMemcpyDeviceToHost, stream));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(diagonal, summary.get(), sizeof(diagonal), cudaMemcpyDeviceToHost, stream));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(&host_info, info.get(), sizeof(int), cudaMemcpyDeviceToHost, stream));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    if (host_info < 0) {
      return absl::InternalError(
          absl::StrCat("cusolverDnXgetrf: argument ", -host_info, " is wrong"));
    }
    DistributedDeterminant det{.sign = 0, .log_abs = -std::numeric_limits<double>::infinity()};
    if (diagonal[2] == 0) {
      const PivotCounts counts[1] = {CountPivots(host_pivots, n, n, n, 1, 0)};
      MATRIXD_ASSIGN_OR_RETURN(
          det, CombineDeterminant(diagonal[0], diagonal[1], diagonal[2], diagonal[3], counts));
    }
    on_run(run, seconds, det);
  }
  return absl::OkStatus();
}

}  // namespace matrixd::multi_gpu
