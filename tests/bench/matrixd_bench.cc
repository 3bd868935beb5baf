// matrixd_bench: one table per operation and size from one run, our backends' times next to the
// libraries called directly on data already on the device (cuSOLVER getrf for the LU determinant,
// cuBLAS gemm for products, cuBLAS getrfBatched for batches of small LUs) and the machine's copy
// bandwidths, so that the gap between an operation and its library call (transfers, layout
// changes, our own kernels) is visible.
//
//   matrixd_bench [--quick] [--det_sizes=4096,8192,16384] [--gemm_n=8192] [--factor_n=4096]
//                 [--cpu_n=2048] [--batch=100000] [--batch_sizes=32,64] [--cpu_batch=10000]
//                 [--repeats=3] [--no_gpu] [--no_cpu]
//
// Times are medians over --repeats runs after one warm-up run. "ours" is ComputeStats::seconds
// (device events around the whole operation, transfers included); "wall" is the host's clock
// around the Backend call.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/cpu/cpu_backend.h"
#include "core/matrix.h"
#include "core/operations.h"

#ifdef MATRIXD_HAVE_CUDA
#include "core/cuda/batch_kernels.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"
#include "core/cuda/device_context.h"
#endif

namespace matrixd {
namespace {

struct Flags {
  std::vector<int> det_sizes = {4096, 8192, 16384};
  int gemm_n = 8192;
  int factor_n = 4096;
  int cpu_n = 2048;
  int batch = 100000;  // matrices per batched LU on the GPU
  std::vector<int> batch_sizes = {32, 64};
  int cpu_batch = 10000;  // matrices per batched LU on the CPU
  int repeats = 3;
  bool gpu = true;
  bool cpu = true;
};

std::vector<int> ParseSizes(std::string_view text) {
  std::vector<int> sizes;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    sizes.push_back(std::atoi(std::string(text.substr(0, comma)).c_str()));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return sizes;
}

bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const size_t equals = arg.find('=');
    const std::string_view name = arg.substr(0, equals);
    const std::string value =
        equals == std::string_view::npos ? "" : std::string(arg.substr(equals + 1));
    if (name == "--quick") {
      flags.det_sizes = {1024, 2048};
      flags.gemm_n = 2048;
      flags.factor_n = 1024;
      flags.cpu_n = 512;
      flags.batch = 20000;
      flags.cpu_batch = 2000;
      flags.repeats = 2;
    } else if (name == "--det_sizes") {
      flags.det_sizes = ParseSizes(value);
    } else if (name == "--gemm_n") {
      flags.gemm_n = std::atoi(value.c_str());
    } else if (name == "--factor_n") {
      flags.factor_n = std::atoi(value.c_str());
    } else if (name == "--cpu_n") {
      flags.cpu_n = std::atoi(value.c_str());
    } else if (name == "--batch") {
      flags.batch = std::max(1, std::atoi(value.c_str()));
    } else if (name == "--batch_sizes") {
      flags.batch_sizes = ParseSizes(value);
    } else if (name == "--cpu_batch") {
      flags.cpu_batch = std::max(1, std::atoi(value.c_str()));
    } else if (name == "--repeats") {
      flags.repeats = std::max(1, std::atoi(value.c_str()));
    } else if (name == "--no_gpu") {
      flags.gpu = false;
    } else if (name == "--no_cpu") {
      flags.cpu = false;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return false;
    }
  }
  return true;
}

// ---- Inputs ----

// splitmix64: fast enough to fill 2^28 entries in about a second.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-52 - 1.0; }

 private:
  uint64_t state_;
};

Matrix RandomMatrix(int64_t rows, int64_t cols, DType dtype, uint64_t seed) {
  Matrix m(rows, cols, dtype);
  Random random(seed);
  if (dtype == DType::kFloat32) {
    for (float& x : m.As<float>()) x = static_cast<float>(random.Uniform());
  } else {
    for (double& x : m.As<double>()) x = random.Uniform();
  }
  return m;
}

// Symmetric with a dominant diagonal, hence positive definite (Gershgorin).
Matrix SpdMatrix(int64_t n, uint64_t seed) {
  Matrix m = RandomMatrix(n, n, DType::kFloat64, seed);
  std::span<double> a = m.As<double>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) a[j * n + i] = a[i * n + j];
    a[i * n + i] = static_cast<double>(n);
  }
  return m;
}

// ---- Measuring ----

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Timing {
  double seconds = NAN;  // ComputeStats::seconds
  double wall = NAN;     // host clock around the call
  std::string error;
};

// Runs `op` (returning a StatusOr<Result with .stats>) once to warm up, then `repeats` times.
template <typename Op>
Timing TimeOperation(int repeats, Op&& op) {
  Timing timing;
  std::vector<double> seconds;
  std::vector<double> wall;
  for (int r = 0; r <= repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    auto result = op();
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok()) {
      timing.error = std::string(result.status().ToString());
      return timing;
    }
    if (r == 0) continue;
    seconds.push_back(result->stats.seconds);
    wall.push_back(elapsed);
  }
  timing.seconds = Median(seconds);
  timing.wall = Median(wall);
  return timing;
}

void PrintHeader(const char* title, const char* columns) {
  std::printf("\n== %s ==\n%s\n", title, columns);
}

std::string Seconds(double s) {
  char text[32];
  if (std::isnan(s)) return "-";
  std::snprintf(text, sizeof(text), "%.4f", s);
  return text;
}

std::string Rate(double flops, double s, double unit) {
  char text[32];
  if (std::isnan(s) || s <= 0) return "-";
  std::snprintf(text, sizeof(text), "%.1f", flops / s / unit);
  return text;
}

// `count` random n x n float64 matrices stacked, as a batched Factorize takes them.
Matrix RandomBatch(int n, int count, uint64_t seed) {
  return RandomMatrix(int64_t{count} * n, n, DType::kFloat64, seed);
}

// Millions of matrices per second, three significant digits.
std::string MillionsPerSecond(double count, double s) {
  char text[32];
  if (std::isnan(s) || s <= 0) return "-";
  std::snprintf(text, sizeof(text), "%.3g", count / s / 1e6);
  return text;
}

FactorizeOptions BatchedLu(int count) {
  return {.kind = FactorizationKind::kLu, .batch_count = count};
}

#ifdef MATRIXD_HAVE_CUDA

// ---- Library calls on resident data ----

// Median device seconds of `call` (queued on context's stream) between two events, after
// `prepare` (untimed) before each run, one warm-up run first.
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

std::string OrError(const absl::StatusOr<double>& value,
                    const std::function<std::string(double)>& f) {
  return value.ok() ? f(*value) : std::string(value.status().ToString());
}

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
  row("copy kernel (device)",
      TimeOnDevice(context, repeats, NoPreparation,
                   [&]() -> absl::Status {
                     MATRIXD_CUDA_RETURN_IF_ERROR(
                         cuda::LaunchCopy(src->data(), dst->data(), bytes, context.stream()));
                     return absl::OkStatus();
                   }),
      2.0 * bytes);
  row("cudaMemcpyAsync D2D",
      TimeOnDevice(context, repeats, NoPreparation,
                   [&]() -> absl::Status {
                     MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst->data(), src->data(), bytes,
                                                                  cudaMemcpyDeviceToDevice,
                                                                  context.stream()));
                     return absl::OkStatus();
                   }),
      2.0 * bytes);
  std::vector<unsigned char> pageable(bytes, 1);
  row("upload, pageable host",
      TimeOnDevice(context, repeats, NoPreparation,
                   [&] { return context.Upload(pageable.data(), *dst, bytes); }),
      bytes);
  row("download, pageable host",
      TimeOnDevice(context, repeats, NoPreparation,
                   [&] { return context.Download(*src, pageable.data(), bytes); }),
      bytes);
  void* pinned = nullptr;
  if (cudaMallocHost(&pinned, bytes) == cudaSuccess) {
    std::memset(pinned, 1, bytes);
    row("upload, pinned host",
        TimeOnDevice(context, repeats, NoPreparation,
                     [&] {
                       cuda::DeviceBuffer& target = *dst;
                       return context.Upload(pinned, target, bytes);
                     }),
        bytes);
    static_cast<void>(cudaFreeHost(pinned));
  }
}

void BenchDeterminant(Backend& backend, cuda::DeviceContext& context, const Flags& flags) {
  PrintHeader("Determinant by LU, float64 (ours: upload + row scaling + getrf + reduction)",
              "n       ours(s)   wall(s)   getrf alone(s)  ours/getrf  getrf GFLOP/s  upload(s)");
  for (int n : flags.det_sizes) {
    const Matrix a = RandomMatrix(n, n, DType::kFloat64, 100 + n);
    DeterminantOptions options;
    options.method = DeterminantMethod::kLu;
    const Timing ours = TimeOperation(
        flags.repeats, [&] { return backend.Determinant(a.view(), options, nullptr); });

    // cuSOLVER dgetrf alone, on a resident copy restored before each run.
    absl::StatusOr<double> getrf = [&]() -> absl::StatusOr<double> {
      const size_t bytes = a.byte_size();
      absl::StatusOr<cuda::DeviceBuffer> pristine = context.Allocate(bytes);
      if (!pristine.ok()) return pristine.status();
      absl::StatusOr<cuda::DeviceBuffer> work = context.Allocate(bytes);
      if (!work.ok()) return work.status();
      if (absl::Status s = context.Upload(a.bytes(), *pristine, bytes); !s.ok()) return s;
      int workspace_elements = 0;
      MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnDgetrf_bufferSize(
          context.cusolver(), n, n, work->as<double>(), n, &workspace_elements));
      absl::StatusOr<cuda::DeviceBuffer> workspace =
          context.Allocate(sizeof(double) * std::max(workspace_elements, 1));
      if (!workspace.ok()) return workspace.status();
      absl::StatusOr<cuda::DeviceBuffer> ints = context.Allocate(sizeof(int) * (n + 1));
      if (!ints.ok()) return ints.status();
      return TimeOnDevice(
          context, flags.repeats,
          [&]() -> absl::Status {
            MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
                work->data(), pristine->data(), bytes, cudaMemcpyDeviceToDevice, context.stream()));
            return absl::OkStatus();
          },
          [&]() -> absl::Status {
            MATRIXD_CUDA_RETURN_IF_ERROR(
                cusolverDnDgetrf(context.cusolver(), n, n, work->as<double>(), n,
                                 workspace->as<double>(), ints->as<int>(), ints->as<int>() + n));
            return absl::OkStatus();
          });
    }();
    absl::StatusOr<double> upload = [&]() -> absl::StatusOr<double> {
      absl::StatusOr<cuda::DeviceBuffer> target = context.Allocate(a.byte_size());
      if (!target.ok()) return target.status();
      return TimeOnDevice(context, flags.repeats, NoPreparation,
                          [&] { return context.Upload(a.bytes(), *target, a.byte_size()); });
    }();
    const double flops = 2.0 / 3.0 * n * static_cast<double>(n) * n;
    char ratio[32] = "-";
    if (getrf.ok() && ours.error.empty())
      std::snprintf(ratio, sizeof(ratio), "%.2f", ours.seconds / *getrf);
    std::printf("%-7d %-9s %-9s %-15s %-11s %-14s %s\n", n, Seconds(ours.seconds).c_str(),
                Seconds(ours.wall).c_str(), OrError(getrf, Seconds).c_str(), ratio,
                OrError(getrf, [&](double t) { return Rate(flops, t, 1e9); }).c_str(),
                OrError(upload, Seconds).c_str());
    if (!ours.error.empty()) std::printf("  ours failed: %s\n", ours.error.c_str());
  }
}

void BenchGemm(Backend& backend, cuda::DeviceContext& context, const Flags& flags) {
  const int n = flags.gemm_n;
  PrintHeader(
      "GEMM C = A B, n x n (ours: upload A, B + gemm + download C)",
      "dtype          n      ours(s)   wall(s)   ours TFLOP/s  cuBLAS alone(s)  cuBLAS TFLOP/s");
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
        flags.repeats, [&] { return backend.Multiply(a.view(), b.view(), options, nullptr); });
    absl::StatusOr<double> direct = [&]() -> absl::StatusOr<double> {
      absl::StatusOr<cuda::DeviceBuffer> da = context.Allocate(a.byte_size());
      absl::StatusOr<cuda::DeviceBuffer> db = context.Allocate(b.byte_size());
      absl::StatusOr<cuda::DeviceBuffer> dc = context.Allocate(a.byte_size());
      if (!da.ok()) return da.status();
      if (!db.ok()) return db.status();
      if (!dc.ok()) return dc.status();
      if (absl::Status s = context.Upload(a.bytes(), *da, a.byte_size()); !s.ok()) return s;
      if (absl::Status s = context.Upload(b.bytes(), *db, b.byte_size()); !s.ok()) return s;
      MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetMathMode(
          context.cublas(), c.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
      absl::StatusOr<double> t =
          TimeOnDevice(context, flags.repeats, NoPreparation, [&]() -> absl::Status {
            if (c.dtype == DType::kFloat64) {
              const double one = 1.0, zero = 0.0;
              MATRIXD_CUDA_RETURN_IF_ERROR(cublasDgemm(
                  context.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, db->as<double>(), n,
                  da->as<double>(), n, &zero, dc->as<double>(), n));
            } else {
              const float one = 1.0f, zero = 0.0f;
              MATRIXD_CUDA_RETURN_IF_ERROR(
                  cublasSgemm(context.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                              db->as<float>(), n, da->as<float>(), n, &zero, dc->as<float>(), n));
            }
            return absl::OkStatus();
          });
      MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetMathMode(context.cublas(), CUBLAS_DEFAULT_MATH));
      return t;
    }();
    std::printf("%-14s %-6d %-9s %-9s %-13s %-16s %s\n", c.name, n, Seconds(ours.seconds).c_str(),
                Seconds(ours.wall).c_str(), Rate(flops, ours.seconds, 1e12).c_str(),
                OrError(direct, Seconds).c_str(),
                OrError(direct, [&](double t) { return Rate(flops, t, 1e12); }).c_str());
    if (!ours.error.empty()) std::printf("  ours failed: %s\n", ours.error.c_str());
  }
}

// Batched LU of small float64 matrices: our Backend call (upload, transposes, getrfBatched, pivot
// summary, download) next to its device part alone (the same kernels and getrfBatched on
// resident data), cuBLAS getrfBatched alone, and the PCIe round trip of the same bytes alone,
// from pageable memory and from memory registered in place (cudaHostRegister and
// cudaHostUnregister included in the time; ours registers batches of 16 MiB and more).
void BenchBatchedLu(Backend& backend, cuda::DeviceContext& context, const Flags& flags) {
  const int count = flags.batch;
  char title[128];
  std::snprintf(title, sizeof(title), "Batched LU, float64, batch %d (M/s: million matrices/s)",
                count);
  PrintHeader(title,
              "n     ours(s)   wall(s)   ours M/s  device part(s)  getrfBatched(s)  alone M/s  "
              "up+down pageable(s)  up+down registered(s)");
  for (const int n : flags.batch_sizes) {
    const Matrix a = RandomBatch(n, count, 200 + n);
    const size_t bytes = a.byte_size();
    const Timing ours = TimeOperation(flags.repeats, [&] {
      return backend.Factorize(a.view(), BatchedLu(count), nullptr, nullptr);
    });

    // cuBLAS dgetrfBatched alone, one call for the whole batch, on a resident copy restored
    // before each run; with `ours_around`, wrapped in our kernels as the Backend call runs them.
    const auto on_device = [&](bool ours_around) -> absl::StatusOr<double> {
      absl::StatusOr<cuda::DeviceBuffer> pristine = context.Allocate(bytes);
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
      if (absl::Status s = context.Upload(a.bytes(), *pristine, bytes); !s.ok()) return s;
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

#endif  // MATRIXD_HAVE_CUDA

// Batched LU of small float64 matrices on the CPU backend, on all its threads and on one.
void BenchBatchedLuCpu(Backend& cpu, const Flags& flags) {
  const int count = flags.cpu_batch;
  char title[128];
  std::snprintf(title, sizeof(title), "CPU: batched LU, float64, batch %d", count);
  PrintHeader(title, "n     ours(s)   wall(s)   ours M/s  one thread(s)  one thread M/s");
  const std::unique_ptr<Backend> serial = MakeCpuBackend({.threads = 1});
  for (const int n : flags.batch_sizes) {
    const Matrix a = RandomBatch(n, count, 300 + n);
    const Timing ours = TimeOperation(
        flags.repeats, [&] { return cpu.Factorize(a.view(), BatchedLu(count), nullptr, nullptr); });
    const Timing one = TimeOperation(flags.repeats, [&] {
      return serial->Factorize(a.view(), BatchedLu(count), nullptr, nullptr);
    });
    const auto per_second = [&](double s) { return MillionsPerSecond(count, s); };
    std::printf("%-5d %-9s %-9s %-9s %-14s %s\n", n, Seconds(ours.seconds).c_str(),
                Seconds(ours.wall).c_str(), per_second(ours.seconds).c_str(),
                Seconds(one.seconds).c_str(), per_second(one.seconds).c_str());
    for (const Timing* t : {&ours, &one}) {
      if (!t->error.empty()) std::printf("  failed: %s\n", t->error.c_str());
    }
  }
}

// LU, Cholesky and QR through a backend (no library-only column yet).
void BenchFactorize(Backend& backend, int n, int repeats) {
  char title[96];
  std::snprintf(title, sizeof(title), "Factorize on %s, float64, n = %d",
                std::string(backend.name()).c_str(), n);
  PrintHeader(title, "kind       ours(s)   wall(s)   GFLOP/s (our count)");
  const Matrix general = RandomMatrix(n, n, DType::kFloat64, 3);
  const Matrix spd = SpdMatrix(n, 4);
  struct Case {
    const char* name;
    FactorizationKind kind;
    const Matrix* a;
  };
  for (const Case& c : {Case{"LU", FactorizationKind::kLu, &general},
                        Case{"Cholesky", FactorizationKind::kCholesky, &spd},
                        Case{"QR", FactorizationKind::kQr, &general}}) {
    double flops = 0;
    const Timing t = TimeOperation(repeats, [&] {
      auto result = backend.Factorize(c.a->view(), {.kind = c.kind}, nullptr, nullptr);
      if (result.ok()) flops = result->stats.flops;
      return result;
    });
    std::printf("%-10s %-9s %-9s %s\n", c.name, Seconds(t.seconds).c_str(), Seconds(t.wall).c_str(),
                Rate(flops, t.seconds, 1e9).c_str());
    if (!t.error.empty()) std::printf("  failed: %s\n", t.error.c_str());
  }
}

void BenchCpu(const Flags& flags) {
  std::unique_ptr<Backend> cpu = MakeCpuBackend();
  const int n = flags.cpu_n;
  std::printf("\n# CPU backend: %s\n", cpu->device().c_str());
  PrintHeader("CPU: determinant by LU and GEMM, float64",
              "operation      n      ours(s)   wall(s)   GFLOP/s");
  const Matrix a = RandomMatrix(n, n, DType::kFloat64, 5);
  const Matrix b = RandomMatrix(n, n, DType::kFloat64, 6);
  DeterminantOptions lu;
  lu.method = DeterminantMethod::kLu;
  const Timing det =
      TimeOperation(flags.repeats, [&] { return cpu->Determinant(a.view(), lu, nullptr); });
  const Timing gemm =
      TimeOperation(flags.repeats, [&] { return cpu->Multiply(a.view(), b.view(), {}, nullptr); });
  const double cube = n * static_cast<double>(n) * n;
  std::printf("%-14s %-6d %-9s %-9s %s\n", "det (LU)", n, Seconds(det.seconds).c_str(),
              Seconds(det.wall).c_str(), Rate(2.0 / 3.0 * cube, det.seconds, 1e9).c_str());
  std::printf("%-14s %-6d %-9s %-9s %s\n", "gemm", n, Seconds(gemm.seconds).c_str(),
              Seconds(gemm.wall).c_str(), Rate(2.0 * cube, gemm.seconds, 1e9).c_str());
  for (const Timing* t : {&det, &gemm}) {
    if (!t->error.empty()) std::printf("  failed: %s\n", t->error.c_str());
  }
  BenchFactorize(*cpu, std::min(n, 2048), flags.repeats);
  BenchBatchedLuCpu(*cpu, flags);
}

int Main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) return 2;
#ifdef MATRIXD_HAVE_CUDA
  if (flags.gpu && CudaDeviceCount() == 0) {
    std::printf("# No CUDA device here: GPU tables skipped.\n");
  } else if (flags.gpu) {
    absl::StatusOr<std::unique_ptr<Backend>> backend = MakeCudaBackend({});
    absl::StatusOr<std::unique_ptr<cuda::DeviceContext>> context = cuda::DeviceContext::Create(0);
    if (!backend.ok() || !context.ok()) {
      std::printf(
          "# CUDA setup failed: %s\n",
          std::string((backend.ok() ? context.status() : backend.status()).ToString()).c_str());
      return 1;
    }
    const cudaDeviceProp& p = (*context)->properties();
    std::printf("# GPU: %s, %d SMs, %.1f GiB, CC %d.%d\n", p.name, p.multiProcessorCount,
                p.totalGlobalMem / 1073741824.0, p.major, p.minor);
    BenchBandwidth(**context, flags.repeats);
    BenchDeterminant(**backend, **context, flags);
    BenchGemm(**backend, **context, flags);
    BenchFactorize(**backend, flags.factor_n, flags.repeats);
    BenchBatchedLu(**backend, **context, flags);
  }
#else
  if (flags.gpu) std::printf("# This build has no CUDA backend: GPU tables skipped.\n");
#endif
  if (flags.cpu) BenchCpu(flags);
  return 0;
}

}  // namespace
}  // namespace matrixd

int main(int argc, char** argv) { return matrixd::Main(argc, argv); }
