// matrixd_ipc_bench: issue 9's CUDA IPC target through a running matrixd (--backend=cuda) on the
// same host and GPU. This process plays the same-host client: it allocates float64 n x n A, B and
// C on its GPU, fills A and B, shares the three allocations by CUDA IPC handle
// (RegisterCudaSharedMemory), and has the server compute C = A B with both operands read and C
// written on the device in place. It checks C against its own cublasDgemm on the same operands
// and times (i) that cublasDgemm alone, (ii) the Multiply round trip through the server. Then the
// error cases on the real GPU: a reference out of bounds, a region too small for the result, a
// result target of the wrong shape, a handle the driver refuses, a handle of the wrong size, an
// unknown device, a name registered twice; and the server still answers afterwards.
// Prints markdown tables; exit status 1 when C differs or an error case gets the wrong status.
//
//   matrixd_ipc_bench --server=127.0.0.1:50051 [--n=8192] [--repeats=5] [--device=0]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/client.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "matrixd (--backend=cuda) on this host");
ABSL_FLAG(int64_t, n, 8192, "order of the float64 matrices");
ABSL_FLAG(int, repeats, 5, "timed calls per path (after one untimed warm-up); medians printed");
ABSL_FLAG(int, device, 0, "CUDA device to allocate on (this process's numbering)");

namespace matrixd {
namespace {

using Clock = std::chrono::steady_clock;

#define IPC_BENCH_CHECK(call)                                                    \
  do {                                                                           \
    if (const auto code = (call); code != 0) {                                   \
      std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, \
                   static_cast<int>(code));                                      \
      std::exit(2);                                                              \
    }                                                                            \
  } while (0)

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// One cudaMalloc per matrix (a CUDA IPC handle names a whole allocation), freed on exit.
class DeviceMatrix {
 public:
  explicit DeviceMatrix(int64_t n) : bytes_(static_cast<size_t>(n * n) * sizeof(double)) {
    IPC_BENCH_CHECK(cudaMalloc(&data_, bytes_));
  }
  ~DeviceMatrix() { cudaFree(data_); }
  DeviceMatrix(const DeviceMatrix&) = delete;
  DeviceMatrix& operator=(const DeviceMatrix&) = delete;

  double* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  std::string Handle() const {
    cudaIpcMemHandle_t handle;
    IPC_BENCH_CHECK(cudaIpcGetMemHandle(&handle, data_));
    return std::string(reinterpret_cast<const char*>(&handle), sizeof(handle));
  }
  std::vector<double> Download() const {
    std::vector<double> host(bytes_ / sizeof(double));
    IPC_BENCH_CHECK(cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  size_t bytes_;
  double* data_ = nullptr;
};

std::span<const std::byte> Bytes(const std::string& s) {
  return std::as_bytes(std::span<const char>(s));
}

v1::SharedMemoryRef Ref(const std::string& region, uint64_t offset, int64_t rows, int64_t cols) {
  v1::SharedMemoryRef ref;
  ref.set_region(region);
  ref.set_offset(offset);
  ref.set_rows(rows);
  ref.set_cols(cols);
  ref.set_dtype(v1::DTYPE_FLOAT64);
  return ref;
}

v1::MultiplyRequest Product(int64_t n) {
  v1::MultiplyRequest request;
  *request.mutable_a_ref()->mutable_shared_memory() = Ref("ipc_a", 0, n, n);
  *request.mutable_b_ref()->mutable_shared_memory() = Ref("ipc_b", 0, n, n);
  (*request.mutable_result_options()->mutable_shared_memory_outputs())["c"] = Ref("ipc_c", 0, n, n);
  return request;
}

// One row of the error table: what was tried, the status wanted and the status got.
struct Expectation {
  int failures = 0;
  void Check(const std::string& what, absl::StatusCode want, const absl::Status& got) {
    const bool ok = got.code() == want;
    failures += ok ? 0 : 1;
    std::printf("| %s | %s | %s | %s |\n", what.c_str(), absl::StatusCodeToString(want).c_str(),
                std::string(got.ToString()).substr(0, 160).c_str(), ok ? "pass" : "FAIL");
  }
};

int Run() {
  const int64_t n = absl::GetFlag(FLAGS_n);
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  const int device = absl::GetFlag(FLAGS_device);
  IPC_BENCH_CHECK(cudaSetDevice(device));
  cudaDeviceProp properties;
  IPC_BENCH_CHECK(cudaGetDeviceProperties(&properties, device));

  DeviceMatrix a(n), b(n), c(n), reference(n);
  {
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    std::vector<double> host(static_cast<size_t>(n * n));
    for (double& v : host) v = uniform(rng);
    IPC_BENCH_CHECK(cudaMemcpy(a.data(), host.data(), a.bytes(), cudaMemcpyHostToDevice));
    for (double& v : host) v = uniform(rng);
    IPC_BENCH_CHECK(cudaMemcpy(b.data(), host.data(), b.bytes(), cudaMemcpyHostToDevice));
  }
  IPC_BENCH_CHECK(cudaMemset(c.data(), 0, c.bytes()));
  IPC_BENCH_CHECK(cudaDeviceSynchronize());  // the server reads what is written by now

  // (i) cuBLAS alone, row-major C = A B as the server calls it: column-major C^T = B^T A^T.
  cublasHandle_t cublas;
  IPC_BENCH_CHECK(cublasCreate(&cublas));
  const double one = 1.0, zero = 0.0;
  const int ni = static_cast<int>(n);
  cudaEvent_t start, stop;
  IPC_BENCH_CHECK(cudaEventCreate(&start));
  IPC_BENCH_CHECK(cudaEventCreate(&stop));
  std::vector<double> cublas_seconds;
  for (int k = 0; k <= repeats; ++k) {
    IPC_BENCH_CHECK(cudaEventRecord(start));
    IPC_BENCH_CHECK(cublasDgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, b.data(), ni,
                                a.data(), ni, &zero, reference.data(), ni));
    IPC_BENCH_CHECK(cudaEventRecord(stop));
    IPC_BENCH_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    IPC_BENCH_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (k > 0) cublas_seconds.push_back(ms / 1e3);
  }

  Client client(absl::GetFlag(FLAGS_server), {.deadline = absl::Minutes(2)});
  static_cast<void>(client.UnregisterCudaSharedMemory(""));  // a previous run's leftovers
  for (const auto& [name, matrix] : {std::pair{"ipc_a", &a}, {"ipc_b", &b}, {"ipc_c", &c}}) {
    absl::StatusOr<v1::SharedMemoryRegion> region =
        client.RegisterCudaSharedMemory(name, Bytes(matrix->Handle()), device, matrix->bytes());
    if (!region.ok()) {
      std::printf("RegisterCudaSharedMemory(%s): %s\n", name, region.status().ToString().c_str());
      return 1;
    }
  }

  // (ii) the round trip through the server, operands and result in the IPC regions.
  std::vector<double> round_trip_seconds, server_seconds;
  for (int k = 0; k <= repeats; ++k) {
    const Clock::time_point begin = Clock::now();
    absl::StatusOr<v1::MultiplyResponse> product = client.Multiply(Product(n));
    const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    if (!product.ok()) {
      std::printf("Multiply through CUDA IPC: %s\n", product.status().ToString().c_str());
      return 1;
    }
    if (product->has_c()) {
      std::printf("Multiply through CUDA IPC returned C inline; want it in region ipc_c\n");
      return 1;
    }
    if (k > 0) {
      round_trip_seconds.push_back(seconds);
      server_seconds.push_back(product->stats().seconds());
    }
  }

  // C against this process's cuBLAS on the same operands.
  const std::vector<double> got = c.Download();
  const std::vector<double> want = reference.Download();
  size_t differing = 0;
  double max_relative = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(double)) != 0) ++differing;
    max_relative =
        std::max(max_relative, std::abs(got[i] - want[i]) / std::max(1.0, std::abs(want[i])));
  }
  // Within rounding: a k-term dot product of entries in [-1, 1] in another summation order.
  const double tolerance = 4.0 * static_cast<double>(n) * 0x1.0p-52;
  const bool correct = max_relative <= tolerance;

  const double cublas_median = Median(cublas_seconds);
  const double round_trip_median = Median(round_trip_seconds);
  std::printf("\n## CUDA IPC GEMM, float64 n = %lld, %s (device %d), median of %d\n\n",
              static_cast<long long>(n), properties.name, device, repeats);
  std::printf("| path | seconds | TFLOP/s | x cuBLAS alone |\n|---|---|---|---|\n");
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  std::printf("| (i) cublasDgemm in this process | %.4f | %.1f | 1.00 |\n", cublas_median,
              flops / cublas_median / 1e12);
  std::printf("| (ii) Multiply round trip via CUDA IPC | %.4f | %.1f | %.3f |\n", round_trip_median,
              flops / round_trip_median / 1e12, round_trip_median / cublas_median);
  std::printf("| server's device time (stats.seconds) | %.4f | %.1f | %.3f |\n",
              Median(server_seconds), flops / Median(server_seconds) / 1e12,
              Median(server_seconds) / cublas_median);
  std::printf("\ntarget (issue 9): (ii) <= 1.1 x (i): %s\n",
              round_trip_median <= 1.1 * cublas_median ? "met" : "NOT met");
  std::printf(
      "C vs cublasDgemm: %zu of %zu elements differ in their bits; max relative "
      "difference %.3g (tolerance %.3g): %s\n",
      differing, got.size(), max_relative, tolerance, correct ? "pass" : "FAIL");

  // The error cases on the real GPU.
  std::printf("\n## error cases\n\n| case | want | got | |\n|---|---|---|---|\n");
  Expectation expect;
  const uint64_t c_bytes = c.bytes();
  {
    v1::MultiplyRequest request = Product(n);
    request.mutable_a_ref()->mutable_shared_memory()->set_offset(8);  // one element past the end
    expect.Check("a_ref out of its region's bounds", absl::StatusCode::kInvalidArgument,
                 client.Multiply(request).status());
  }
  expect.Check("register ipc_small: C's allocation, half its size", absl::StatusCode::kOk,
               client.RegisterCudaSharedMemory("ipc_small", Bytes(c.Handle()), device, c_bytes / 2)
                   .status());
  {
    v1::MultiplyRequest request = Product(n);
    (*request.mutable_result_options()->mutable_shared_memory_outputs())["c"] =
        Ref("ipc_small", 0, n, n);
    expect.Check("result into a region too small for it", absl::StatusCode::kInvalidArgument,
                 client.Multiply(request).status());
    (*request.mutable_result_options()->mutable_shared_memory_outputs())["c"] =
        Ref("ipc_small", 0, n / 2, n);
    expect.Check("result target of the wrong shape", absl::StatusCode::kInvalidArgument,
                 client.Multiply(request).status());
  }
  expect.Check(
      "byte_size beyond the allocation", absl::StatusCode::kInvalidArgument,
      client.RegisterCudaSharedMemory("ipc_big", Bytes(c.Handle()), device, 2 * c_bytes).status());
  expect.Check(
      "a handle the driver refuses (64 zero bytes)", absl::StatusCode::kInvalidArgument,
      client.RegisterCudaSharedMemory("ipc_bad", Bytes(std::string(64, '\0')), device, 1024)
          .status());
  expect.Check("raw_handle of 10 bytes", absl::StatusCode::kInvalidArgument,
               client.RegisterCudaSharedMemory("ipc_bad", Bytes(std::string(10, 'x')), device, 1024)
                   .status());
  expect.Check("device_id 99", absl::StatusCode::kInvalidArgument,
               client.RegisterCudaSharedMemory("ipc_bad", Bytes(a.Handle()), 99, 1024).status());
  expect.Check("ipc_a registered twice", absl::StatusCode::kAlreadyExists,
               client.RegisterCudaSharedMemory("ipc_a", Bytes(a.Handle()), device, 1024).status());
  expect.Check("unregister ipc_small", absl::StatusCode::kOk,
               client.UnregisterCudaSharedMemory("ipc_small").status());
  {
    v1::MultiplyRequest request = Product(n);
    (*request.mutable_result_options()->mutable_shared_memory_outputs())["c"] =
        Ref("ipc_small", 0, n / 2, n);
    expect.Check("result into an unregistered region", absl::StatusCode::kNotFound,
                 client.Multiply(request).status());
  }
  // Still serving, and still right: C again, compared with the first answer.
  IPC_BENCH_CHECK(cudaMemset(c.data(), 0, c.bytes()));
  IPC_BENCH_CHECK(cudaDeviceSynchronize());
  expect.Check("the product again after the errors", absl::StatusCode::kOk,
               client.Multiply(Product(n)).status());
  const bool same_again = c.Download() == got;
  std::printf("\nC after the error cases equals the first C bit for bit: %s\n",
              same_again ? "pass" : "FAIL");

  absl::StatusOr<v1::ListSharedMemoryResponse> listed = client.ListSharedMemory();
  if (listed.ok()) {
    for (const v1::SharedMemoryRegion& region : listed->regions()) {
      std::printf("listed: %s kind %s device %d %llu bytes\n", region.name().c_str(),
                  v1::SharedMemoryKind_Name(region.kind()).c_str(), region.device_id(),
                  static_cast<unsigned long long>(region.byte_size()));
    }
  }
  static_cast<void>(client.UnregisterCudaSharedMemory(""));
  cublasDestroy(cublas);
  return correct && same_again && expect.failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace matrixd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return matrixd::Run();
}
