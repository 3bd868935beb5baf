// matrixd_cannon_bench --n=N --gpus=R [--repeats=3]: times Cannon's float64 product of two random
// N x N matrices on the first R GPUs (the rounds only: operands already on the GPUs, as resident
// matrices are), prints one line: gpus, n, q, best rounds seconds, TFLOP/s, scatter and gather.
// The operands are the Generate RPC's seeded random matrices, made on the host by every core (at
// n = 65536 two 32 GiB operands; one thread took most of a device call's time).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "core/matrix_generator.h"
#include "core/multi_gpu/cannon_gemm.h"

ABSL_FLAG(int64_t, n, 4096, "matrix order");
ABSL_FLAG(int, gpus, 1, "GPUs to use (ordinals 0 .. gpus-1)");
ABSL_FLAG(int, repeats, 3, "runs; the best is reported");

namespace {

// An n x n float64 seeded random matrix in `storage` (not cleared first), rows made in chunks on
// every core; the entries are those of GenerateOnHost for the whole matrix.
matrixd::Matrix ParallelRandom(int64_t n, uint64_t seed, std::unique_ptr<double[]>& storage) {
  storage.reset(new double[static_cast<size_t>(n * n)]);
  const int64_t threads = std::max(1u, std::thread::hardware_concurrency());
  const int64_t chunk = (n + threads - 1) / threads;
  std::vector<std::thread> workers;
  for (int64_t c = 0; c * chunk < n; ++c) {
    workers.emplace_back([&, c] {
      const int64_t rows = std::min(chunk, n - c * chunk);
      const matrixd::GeneratedRows where{.block = chunk, .stride = 1, .offset = c};
      std::byte* out = reinterpret_cast<std::byte*>(storage.get() + c * chunk * n);
      const absl::Status s = matrixd::GenerateOnHost(
          {.kind = matrixd::GeneratorKind::kRandom, .seed = seed}, where, rows, n,
          matrixd::DType::kFloat64, {out, static_cast<size_t>(rows * n) * sizeof(double)});
      if (!s.ok()) std::fprintf(stderr, "generate: %s\n", std::string(s.message()).c_str());
    });
  }
  for (std::thread& w : workers) w.join();
  return matrixd::Matrix::Borrowing(n, n, matrixd::DType::kFloat64,
                                    reinterpret_cast<std::byte*>(storage.get()));
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int64_t n = absl::GetFlag(FLAGS_n);
  const int gpus = absl::GetFlag(FLAGS_gpus);
  std::vector<int> devices;
  for (int d = 0; d < gpus; ++d) devices.push_back(d);
  std::unique_ptr<double[]> a_storage, b_storage;
  const matrixd::Matrix a = ParallelRandom(n, 1, a_storage);
  const matrixd::Matrix b = ParallelRandom(n, 2, b_storage);
  matrixd::multi_gpu::CannonTimes best{1e30, 1e30, 1e30};
  for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
    matrixd::multi_gpu::CannonTimes times;
    auto c = matrixd::multi_gpu::CannonGemm(devices, a.view(), b.view(), &times);
    if (!c.ok()) {
      std::fprintf(stderr, "cannon: %s\n", std::string(c.status().message()).c_str());
      return 1;
    }
    best.rounds_seconds = std::min(best.rounds_seconds, times.rounds_seconds);
    best.scatter_seconds = std::min(best.scatter_seconds, times.scatter_seconds);
    best.gather_seconds = std::min(best.gather_seconds, times.gather_seconds);
  }
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  std::printf(
      "cannon gpus=%d n=%lld q=%d rounds=%.4f s (%.1f TFLOP/s) scatter=%.3f s gather=%.3f s\n",
      gpus, static_cast<long long>(n), matrixd::multi_gpu::CannonGridSide(gpus),
      best.rounds_seconds, flops / best.rounds_seconds * 1e-12, best.scatter_seconds,
      best.gather_seconds);
  return 0;
}
