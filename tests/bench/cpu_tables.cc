// The CPU backend's tables: determinant by LU and GEMM, the factorizations, and batched LU on all
// threads and on one.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "core/cpu/cpu_backend.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"

namespace matrixd::bench {
namespace {

void BenchBatchedLuCpu(Backend& cpu, const Flags& flags) {
  const int count = flags.cpu_batch;
  PrintHeader("CPU: batched LU, float64, batch " + std::to_string(count),
              "n     ours(s)   wall(s)   ours M/s  one thread(s)  one thread M/s");
  const std::unique_ptr<Backend> serial = MakeCpuBackend({.threads = 1});
  const FactorizeOptions batched{.kind = FactorizationKind::kLu, .batch_count = count};
  for (const int n : flags.batch_sizes) {
    const Matrix a = RandomBatch(n, count, 300 + n);
    const Timing ours = TimeOperation(
        flags.repeats, [&] { return cpu.Factorize(a.view(), batched, nullptr, nullptr); });
    const Timing one = TimeOperation(
        flags.repeats, [&] { return serial->Factorize(a.view(), batched, nullptr, nullptr); });
    const auto per_second = [&](double s) { return MillionsPerSecond(count, s); };
    std::printf("%-5d %-9s %-9s %-9s %-14s %s\n", n, Seconds(ours.seconds).c_str(),
                Seconds(ours.wall).c_str(), per_second(ours.seconds).c_str(),
                Seconds(one.seconds).c_str(), per_second(one.seconds).c_str());
    for (const Timing* t : {&ours, &one}) {
      if (!t->error.empty()) std::printf("  failed: %s\n", t->error.c_str());
    }
  }
}

}  // namespace

void BenchCpu(Backend& cpu, const Flags& flags) {
  const int n = flags.cpu_n;
  std::printf("\n# CPU backend: %s\n", cpu.device().c_str());
  PrintHeader("CPU: determinant by LU and GEMM, float64",
              "operation      n      ours(s)   wall(s)   GFLOP/s");
  const Matrix a = RandomMatrix(n, n, DType::kFloat64, 5);
  const Matrix b = RandomMatrix(n, n, DType::kFloat64, 6);
  DeterminantOptions lu;
  lu.method = DeterminantMethod::kLu;
  const Timing det =
      TimeOperation(flags.repeats, [&] { return cpu.Determinant(a.view(), lu, nullptr); });
  const Timing gemm =
      TimeOperation(flags.repeats, [&] { return cpu.Multiply(a.view(), b.view(), {}, nullptr); });
  const double cube = n * static_cast<double>(n) * n;
  std::printf("%-14s %-6d %-9s %-9s %s\n", "det (LU)", n, Seconds(det.seconds).c_str(),
              Seconds(det.wall).c_str(), Rate(2.0 / 3.0 * cube, det.seconds, 1e9).c_str());
  std::printf("%-14s %-6d %-9s %-9s %s\n", "gemm", n, Seconds(gemm.seconds).c_str(),
              Seconds(gemm.wall).c_str(), Rate(2.0 * cube, gemm.seconds, 1e9).c_str());
  for (const Timing* t : {&det, &gemm}) {
    if (!t->error.empty()) std::printf("  failed: %s\n", t->error.c_str());
  }
  BenchFactorize(cpu, std::min(n, 2048), flags.repeats);
  BenchBatchedLuCpu(cpu, flags);
}

}  // namespace matrixd::bench
