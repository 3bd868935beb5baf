// The dense GPU tables: bandwidths, determinant by LU and GEMM, each operation next to its library
// call alone on resident data and next to its own device part (the kernels it times itself).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"
#include "tests/bench/cuda_device_timing.h"

namespace matrixd::bench {

void BenchBandwidth(cuda::DeviceContext& context, int repeats) {
  const size_t bytes = size_t{1} << 30;
  PrintHeader("Bandwidth, 1 GiB",
              "what                          seconds   GB/s (bytes read + written, or moved)");
  absl::StatusOr<cuda::DeviceBuffer> src = context.Allocate(bytes);
  absl::StatusOr<cuda::DeviceBuffer> dst = context.Allocate(bytes);
  if (!src.ok() || !dst.ok()) {
    std::printf("allocation failed: %s\n",
                std::string((src.ok() ? dst.status() : src.status()).ToString()).c_str());
    return;
  }
  static_cast<void>(cudaMemsetAsync(src->data(), 1, bytes, context.stream()));
  const auto row = [&](const char* what, const absl::StatusOr<double>& s, double moved) {
    std::printf("%-29s %-9s %s\n", what, OrError(s, Seconds).c_str(),
                OrError(s, [&](double t) { return Rate(moved, t, 1e9); }).c_str());
  };
  row("copy kernel (device)", TimeCopyKernel(context, bytes, repeats), 2.0 * bytes);
  row("cudaMemcpyAsync D2D",
      TimeOnDevice(context, repeats, NoPreparation,
                   [&]() -> absl::Status {
                     MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst->data(), src->data(), bytes,
                                                                  cudaMemcpyDeviceToDevice,
                                                                  context.stream()));
                     return absl::OkStatus();
                   }),
      2.0 * bytes);
  // Pageable host memory both ways: the driver's own staging (cudaMemcpyAsync as is), and ours
  // (DeviceContext::Upload/Download through the pinned chunks of pinned_staging.h).
  std::vector<unsigned char> pageable(bytes, 1);
  row("upload, pageable, driver",
      TimeOnDevice(context, repeats, NoPreparation,
                   [&]() -> absl::Status {
                     MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst->data(), pageable.data(),
                                                                  bytes, cudaMemcpyHostToDevice,
                                                                  context.stream()));
                     return absl::OkStatus();
                   }),
      bytes);
  row("upload, pageable, staged",
      TimeOnDevice(context, repeats, NoPreparation,
                   [&] { return context.Upload(pageable.data(), *dst, bytes); }),
      bytes);
  row("download, pageable, driver",
      TimeOnDevice(context, repeats, NoPreparation,
                   [&]() -> absl::Status {
                     MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(pageable.data(), src->data(),
                                                                  bytes, cudaMemcpyDeviceToHost,
                                                                  context.stream()));
                     return absl::OkStatus();
                   }),
      bytes);
  row("download, pageable, staged",
      TimeOnDevice(context, repeats, NoPreparation,
                   [&] { return context.Download(*src, pageable.data(), bytes); }),
      bytes);
  void* pinned = nullptr;
  if (cudaMallocHost(&pinned, bytes) == cudaSuccess) {
    std::memset(pinned, 1, bytes);
    row("upload, pinned host",
        TimeOnDevice(context, repeats, NoPreparation,
                     [&] { return context.Upload(pinned, *dst, bytes); }),
        bytes);
    static_cast<void>(cudaFreeHost(pinned));
  }
}

void BenchDeterminant(Backend& gpu, cuda::DeviceContext& context, const Flags& flags) {
  PrintHeader("Determinant by LU, float64 (ours: upload + row scaling + getrf + reduction)",
              "n       ours(s)   wall(s)   getrf alone(s)  ours/getrf  getrf GFLOP/s  upload(s)  "
              "device part(s)  device/getrf  pinned(s)",
              {"device part: the kernels the operation times itself (stats.kernels: scale_rows + "
               "cusolver_getrf), no transfers",
               "pinned: the same backend call with the matrix already in pinned host memory "
               "(cudaMallocHost), the baseline of the shared-memory target (issue 9)",
               "getrf alone: cusolverDnDgetrf on a resident copy; target: device/getrf <= 1.10 at "
               "n = 16384"});
  for (int n : flags.det_sizes) {
    const Matrix a = RandomMatrix(n, n, DType::kFloat64, 100 + n);
    DeterminantOptions options;
    options.method = DeterminantMethod::kLu;
    const Timing ours =
        TimeOperation(flags.repeats, [&] { return gpu.Determinant(a.view(), options, nullptr); });
    const absl::StatusOr<double> getrf = TimeDgetrf(context, a, flags.repeats);
    const absl::StatusOr<double> upload = TimeUpload(context, a, flags.repeats);
    const double flops = 2.0 / 3.0 * n * static_cast<double>(n) * n;
    const double alone = getrf.ok() ? *getrf : NAN;
    Timing pinned;
    void* pinned_bytes = nullptr;
    if (cudaMallocHost(&pinned_bytes, a.byte_size()) == cudaSuccess) {
      std::memcpy(pinned_bytes, a.bytes(), a.byte_size());
      const MatrixView view{.rows = n,
                            .cols = n,
                            .dtype = DType::kFloat64,
                            .data = static_cast<const std::byte*>(pinned_bytes)};
      pinned =
          TimeOperation(flags.repeats, [&] { return gpu.Determinant(view, options, nullptr); });
      static_cast<void>(cudaFreeHost(pinned_bytes));
    }
    std::printf("%-7d %-9s %-9s %-15s %-11s %-14s %-10s %-15s %-13s %s\n", n,
                Seconds(ours.seconds).c_str(), Seconds(ours.wall).c_str(),
                OrError(getrf, Seconds).c_str(), Ratio(ours.seconds, alone).c_str(),
                OrError(getrf, [&](double t) { return Rate(flops, t, 1e9); }).c_str(),
                OrError(upload, Seconds).c_str(), Seconds(ours.device).c_str(),
                Ratio(ours.device, alone).c_str(), Seconds(pinned.seconds).c_str());
    if (!ours.error.empty()) std::printf("  ours failed: %s\n", ours.error.c_str());
    if (!pinned.error.empty()) std::printf("  pinned failed: %s\n", pinned.error.c_str());
  }
}

void BenchGemm(Backend& gpu, cuda::DeviceContext& context, const Flags& flags) {
  const int n = flags.gemm_n;
  PrintHeader(
      "GEMM C = A B, n x n (ours: upload A, B + gemm + download C)",
      "dtype          n      ours(s)   wall(s)   ours TFLOP/s  cuBLAS alone(s)  cuBLAS TFLOP/s  "
      "device part(s)  device/alone",
      {"device part: the gemm as the operation times it (stats.kernels: cublas_gemm), no "
       "transfers",
       "cuBLAS alone: the same gemm on resident operands; target (float64): device/alone <= "
       "1.05, i.e. >= 0.95x cuBLAS"});
  const double flops = 2.0 * n * static_cast<double>(n) * n;
  struct Case {
    const char* name;
    DType dtype;
    bool tf32;
  };
  for (const Case& c :
       {Case{"float64", DType::kFloat64, false}, Case{"float32", DType::kFloat32, false},
        Case{"float32+tf32", DType::kFloat32, true}}) {
    const Matrix a = RandomMatrix(n, n, c.dtype, 7);
    const Matrix b = RandomMatrix(n, n, c.dtype, 8);
    MultiplyOptions options;
    options.allow_tf32 = c.tf32;
    const Timing ours = TimeOperation(
        flags.repeats, [&] { return gpu.Multiply(a.view(), b.view(), options, nullptr); });
    const absl::StatusOr<double> direct = TimeCublasGemm(context, a, b, c.tf32, flags.repeats);
    std::printf("%-14s %-6d %-9s %-9s %-13s %-16s %-15s %-15s %s\n", c.name, n,
                Seconds(ours.seconds).c_str(), Seconds(ours.wall).c_str(),
                Rate(flops, ours.seconds, 1e12).c_str(), OrError(direct, Seconds).c_str(),
                OrError(direct, [&](double t) { return Rate(flops, t, 1e12); }).c_str(),
                Seconds(ours.device).c_str(),
                Ratio(ours.device, direct.ok() ? *direct : NAN).c_str());
    if (!ours.error.empty()) std::printf("  ours failed: %s\n", ours.error.c_str());
  }
}

}  // namespace matrixd::bench
