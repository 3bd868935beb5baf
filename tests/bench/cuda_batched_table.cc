// Batched LU of small float64 matrices on the GPU: our Backend call (upload, transposes,
// getrfBatched, pivot summary, download) next to its device part alone (the same kernels and
// getrfBatched on resident data), cuBLAS getrfBatched alone, and the PCIe round trip of the same
// bytes alone, from pageable memory and from memory registered in place (cudaHostRegister and
// cudaHostUnregister included in the time; ours registers batches of 16 MiB and more).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "core/cuda/batch_kernels.h"
#include "core/cuda/cuda_status.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"
#include "tests/bench/cuda_device_timing.h"

namespace matrixd::bench {

void BenchBatchedLu(Backend& gpu, cuda::DeviceContext& context, const Flags& flags) {
  const int count = flags.batch;
  char title[128];
  std::snprintf(title, sizeof(title), "Batched LU, float64, batch %d (M/s: million matrices/s)",
                count);
  PrintHeader(title,
              "n     ours(s)   wall(s)   ours M/s  device part(s)  getrfBatched(s)  alone M/s  "
              "up+down pageable(s)  up+down registered(s)");
  const FactorizeOptions batched{.kind = FactorizationKind::kLu, .batch_count = count};
  for (const int n : flags.batch_sizes) {
    const Matrix a = RandomBatch(n, count, 200 + n);
    const size_t bytes = a.byte_size();
    const Timing ours = TimeOperation(
        flags.repeats, [&] { return gpu.Factorize(a.view(), batched, nullptr, nullptr); });

    // cuBLAS dgetrfBatched alone, one call for the whole batch, on a resident copy restored
    // before each run; with `ours_around`, wrapped in our kernels as the Backend call runs them.
    const auto on_device = [&](bool ours_around) -> absl::StatusOr<double> {
      absl::StatusOr<cuda::DeviceBuffer> pristine = UploadMatrix(context, a);
      if (!pristine.ok()) return pristine.status();
      absl::StatusOr<cuda::DeviceBuffer> work = context.Allocate(bytes);
      if (!work.ok()) return work.status();
      absl::StatusOr<cuda::DeviceBuffer> pointers = context.Allocate(sizeof(double*) * count);
      if (!pointers.ok()) return pointers.status();
      absl::StatusOr<cuda::DeviceBuffer> ints = context.Allocate(sizeof(int) * count * (n + 3));
      if (!ints.ok()) return ints.status();
      absl::StatusOr<cuda::DeviceBuffer> rows = context.Allocate(bytes);
      if (!rows.ok()) return rows.status();
      absl::StatusOr<cuda::DeviceBuffer> permutation =
          context.Allocate(sizeof(int64_t) * count * n);
      if (!permutation.ok()) return permutation.status();
      int* info = ints->as<int>();
      int* ipiv = info + 3 * count;
      MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchFillPointers(
          pointers->as<void*>(), work->data(), sizeof(double) * n * n, count, context.stream()));
      return TimeOnDevice(
          context, flags.repeats,
          [&]() -> absl::Status {
            MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
                work->data(), pristine->data(), bytes, cudaMemcpyDeviceToDevice, context.stream()));
            return absl::OkStatus();
          },
          [&]() -> absl::Status {
            const cudaStream_t stream = context.stream();
            if (ours_around) {
              MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchBatchedTranspose(
                  pristine->data(), n, n, count, work->data(), sizeof(double), stream));
            }
            MATRIXD_CUDA_RETURN_IF_ERROR(cublasDgetrfBatched(
                context.cublas(), n, pointers->as<double*>(), n, ipiv, info, count));
            if (ours_around) {
              MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchBatchedLuSummary(
                  work->as<double>(), ipiv, n, count, permutation->as<int64_t>(), info + count,
                  info + 2 * count, stream));
              MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchBatchedTranspose(
                  work->data(), n, n, count, rows->data(), sizeof(double), stream));
            }
            return absl::OkStatus();
          });
    };
    const absl::StatusOr<double> device_part = on_device(true);
    const absl::StatusOr<double> alone = on_device(false);

    Matrix back(a.rows(), a.cols(), a.dtype());
    const auto round_trip = [&](bool registered) -> absl::StatusOr<double> {
      absl::StatusOr<cuda::DeviceBuffer> target = context.Allocate(bytes);
      if (!target.ok()) return target.status();
      return TimeOnDevice(context, flags.repeats, NoPreparation, [&]() -> absl::Status {
        void* in = const_cast<std::byte*>(a.bytes());
        if (registered) {
          MATRIXD_CUDA_RETURN_IF_ERROR(cudaHostRegister(in, bytes, cudaHostRegisterDefault));
          MATRIXD_CUDA_RETURN_IF_ERROR(
              cudaHostRegister(back.mutable_bytes(), bytes, cudaHostRegisterDefault));
        }
        absl::Status s = context.Upload(in, *target, bytes);
        if (s.ok()) s = context.Download(*target, back.mutable_bytes(), bytes);
        if (registered) {
          MATRIXD_CUDA_RETURN_IF_ERROR(cudaHostUnregister(in));
          MATRIXD_CUDA_RETURN_IF_ERROR(cudaHostUnregister(back.mutable_bytes()));
        }
        return s;
      });
    };
    const absl::StatusOr<double> pageable = round_trip(false);
    const absl::StatusOr<double> registered = round_trip(true);

    const auto per_second = [&](double s) { return MillionsPerSecond(count, s); };
    std::printf("%-5d %-9s %-9s %-9s %-15s %-16s %-10s %-20s %s\n", n,
                Seconds(ours.seconds).c_str(), Seconds(ours.wall).c_str(),
                per_second(ours.seconds).c_str(), OrError(device_part, Seconds).c_str(),
                OrError(alone, Seconds).c_str(), OrError(alone, per_second).c_str(),
                OrError(pageable, Seconds).c_str(), OrError(registered, Seconds).c_str());
    if (!ours.error.empty()) std::printf("  ours failed: %s\n", ours.error.c_str());
  }
}

}  // namespace matrixd::bench
