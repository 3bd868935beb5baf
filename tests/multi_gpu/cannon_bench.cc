// matrixd_cannon_bench --n=N --gpus=R [--repeats=3]: times Cannon's float64 product of two random
// N x N matrices on the first R GPUs (the rounds only: operands already on the GPUs, as resident
// matrices are), prints one line: gpus, n, q, best rounds seconds, TFLOP/s, scatter and gather.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "core/multi_gpu/cannon_gemm.h"
#include "tests/core/dense_test_support.h"

ABSL_FLAG(int64_t, n, 4096, "matrix order");
ABSL_FLAG(int, gpus, 1, "GPUs to use (ordinals 0 .. gpus-1)");
ABSL_FLAG(int, repeats, 3, "runs; the best is reported");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int64_t n = absl::GetFlag(FLAGS_n);
  const int gpus = absl::GetFlag(FLAGS_gpus);
  std::vector<int> devices;
  for (int d = 0; d < gpus; ++d) devices.push_back(d);
  const matrixd::Matrix a = matrixd::testing::RandomMatrix<double>(n, n, 1);
  const matrixd::Matrix b = matrixd::testing::RandomMatrix<double>(n, n, 2);
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
