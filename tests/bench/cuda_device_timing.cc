#include "tests/bench/cuda_device_timing.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"
#include "tests/bench/bench_timing.h"

namespace matrixd::bench {

absl::StatusOr<double> TimeOnDevice(cuda::DeviceContext& context, int repeats,
                                    const std::function<absl::Status()>& prepare,
                                    const std::function<absl::Status()>& call) {
  absl::StatusOr<cuda::EventTimer> timer = cuda::EventTimer::Create();
  if (!timer.ok()) return timer.status();
  std::vector<double> seconds;
  for (int r = 0; r <= repeats; ++r) {
    if (absl::Status s = prepare(); !s.ok()) return s;
    if (absl::Status s = timer->Start(context.stream()); !s.ok()) return s;
    if (absl::Status s = call(); !s.ok()) return s;
    if (absl::Status s = timer->Stop(context.stream()); !s.ok()) return s;
    absl::StatusOr<double> elapsed = timer->Seconds();
    if (!elapsed.ok()) return elapsed.status();
    if (r > 0) seconds.push_back(*elapsed);
  }
  return Median(seconds);
}

absl::Status NoPreparation() { return absl::OkStatus(); }

absl::StatusOr<cuda::DeviceBuffer> UploadMatrix(cuda::DeviceContext& context, const Matrix& a) {
  absl::StatusOr<cuda::DeviceBuffer> buffer = context.Allocate(a.byte_size());
  if (!buffer.ok()) return buffer.status();
  if (absl::Status s = context.Upload(a.bytes(), *buffer, a.byte_size()); !s.ok()) return s;
  return buffer;
}

absl::StatusOr<double> TimeCopyKernel(cuda::DeviceContext& context, size_t bytes, int repeats) {
  bytes = std::max<size_t>(bytes / 16 * 16, 16);
  absl::StatusOr<cuda::DeviceBuffer> src = context.Allocate(bytes);
  if (!src.ok()) return src.status();
  absl::StatusOr<cuda::DeviceBuffer> dst = context.Allocate(bytes);
  if (!dst.ok()) return dst.status();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(src->data(), 1, bytes, context.stream()));
  return TimeOnDevice(context, repeats, NoPreparation, [&]() -> absl::Status {
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cuda::LaunchCopy(src->data(), dst->data(), bytes, context.stream()));
    return absl::OkStatus();
  });
}

absl::StatusOr<double> TimeCublasGemm(cuda::DeviceContext& context, const Matrix& a,
                                      const Matrix& b, bool tf32, int repeats) {
  const int n = static_cast<int>(a.rows());
  absl::StatusOr<cuda::DeviceBuffer> da = UploadMatrix(context, a);
  if (!da.ok()) return da.status();
  absl::StatusOr<cuda::DeviceBuffer> db = UploadMatrix(context, b);
  if (!db.ok()) return db.status();
  absl::StatusOr<cuda::DeviceBuffer> dc = context.Allocate(a.byte_size());
  if (!dc.ok()) return dc.status();
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cublasSetMathMode(context.cublas(), tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  // Row-major C = A B is column-major C^T = B^T A^T: B comes first.
  absl::StatusOr<double> t = TimeOnDevice(context, repeats, NoPreparation, [&]() -> absl::Status {
    if (a.dtype() == DType::kFloat64) {
      const double one = 1.0, zero = 0.0;
      MATRIXD_CUDA_RETURN_IF_ERROR(cublasDgemm(context.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n,
                                               &one, db->as<double>(), n, da->as<double>(), n,
                                               &zero, dc->as<double>(), n));
    } else {
      const float one = 1.0f, zero = 0.0f;
      MATRIXD_CUDA_RETURN_IF_ERROR(cublasSgemm(context.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n,
                                               &one, db->as<float>(), n, da->as<float>(), n, &zero,
                                               dc->as<float>(), n));
    }
    return absl::OkStatus();
  });
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetMathMode(context.cublas(), CUBLAS_DEFAULT_MATH));
  return t;
}

absl::StatusOr<double> TimeDgetrf(cuda::DeviceContext& context, const Matrix& a, int repeats) {
  const int n = static_cast<int>(a.rows());
  const size_t bytes = a.byte_size();
  absl::StatusOr<cuda::DeviceBuffer> pristine = UploadMatrix(context, a);
  if (!pristine.ok()) return pristine.status();
  absl::StatusOr<cuda::DeviceBuffer> work = context.Allocate(bytes);
  if (!work.ok()) return work.status();
  int workspace_elements = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnDgetrf_bufferSize(
      context.cusolver(), n, n, work->as<double>(), n, &workspace_elements));
  absl::StatusOr<cuda::DeviceBuffer> workspace =
      context.Allocate(sizeof(double) * std::max(workspace_elements, 1));
  if (!workspace.ok()) return workspace.status();
  absl::StatusOr<cuda::DeviceBuffer> ints = context.Allocate(sizeof(int) * (n + 1));
  if (!ints.ok()) return ints.status();
  return TimeOnDevice(
      context, repeats,
      [&]() -> absl::Status {
        MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(work->data(), pristine->data(), bytes,
                                                     cudaMemcpyDeviceToDevice, context.stream()));
        return absl::OkStatus();
      },
      [&]() -> absl::Status {
        MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnDgetrf(context.cusolver(), n, n, work->as<double>(),
                                                      n, workspace->as<double>(), ints->as<int>(),
                                                      ints->as<int>() + n));
        return absl::OkStatus();
      });
}

absl::StatusOr<double> TimeUpload(cuda::DeviceContext& context, const Matrix& a, int repeats) {
  absl::StatusOr<cuda::DeviceBuffer> target = context.Allocate(a.byte_size());
  if (!target.ok()) return target.status();
  return TimeOnDevice(context, repeats, NoPreparation,
                      [&] { return context.Upload(a.bytes(), *target, a.byte_size()); });
}

}  // namespace matrixd::bench
