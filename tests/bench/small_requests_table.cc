// The "small" table: many small determinants as separate Backend calls from concurrent callers,
// against one batched LU of the same matrices (see bench_tables.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/matrix.h"
#include "core/operations.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"

namespace matrixd::bench {
namespace {

// Wall seconds for `count` LU determinants of the n x n blocks of `stacked`, spread over
// `callers` threads; the first failure's message in `error`.
double SeparateCalls(Backend& backend, const Matrix& stacked, int n, int count, int callers,
                     std::string& error) {
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::string> errors(static_cast<size_t>(callers));
  DeterminantOptions lu;
  lu.method = DeterminantMethod::kLu;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < callers; ++t) {
    threads.emplace_back([&, t] {
      for (int i = next++; i < count && !failed; i = next++) {
        MatrixView one = stacked.view();
        one.rows = n;
        one.data += static_cast<size_t>(i) * n * n * sizeof(double);
        absl::StatusOr<DeterminantResult> det = backend.Determinant(one, lu, nullptr);
        if (!det.ok()) {
          errors[t] = std::string(det.status().ToString());
          failed = true;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& e : errors) {
    if (!e.empty()) error = e;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void BenchSmallRequests(const std::string& label,
                        const std::function<std::unique_ptr<Backend>(int callers)>& make,
                        const Flags& flags) {
  const int count = flags.small_count;
  PrintHeader(label + ": " + std::to_string(count) +
                  " small float64 determinants, one call each vs one batched LU",
              "n     how                        wall(s)   K matrices/s  batched/this",
              {"one call each: Determinant(method LU) per matrix from T threads (CUDA: T streams)",
               "batched: one Factorize(LU, batch_count = count) on the same matrices; its "
               "determinants are the products of the pivots, a host loop not timed here"});
  const int most_callers =
      *std::max_element(flags.small_threads.begin(), flags.small_threads.end());
  const std::unique_ptr<Backend> backend = make(std::max(1, most_callers));
  if (backend == nullptr) {
    std::printf("  failed: no backend\n");
    return;
  }
  for (const int n : flags.small_sizes) {
    const Matrix stacked = RandomBatch(n, count, 700 + n);
    const FactorizeOptions batched{.kind = FactorizationKind::kLu, .batch_count = count};
    const Timing batch = TimeOperation(flags.repeats, [&] {
      return backend->Factorize(stacked.view(), batched, nullptr, nullptr);
    });
    const double batch_rate = count / batch.wall;
    for (const int callers : flags.small_threads) {
      std::string error;
      SeparateCalls(*backend, stacked, n, std::min(count, 64), callers, error);  // warm-up
      const double wall = SeparateCalls(*backend, stacked, n, count, callers, error);
      const double rate = count / wall;
      std::printf("%-5d %-26s %-9s %-13.1f %.1f\n", n,
                  ("one call each, " + std::to_string(callers) + " threads").c_str(),
                  Seconds(wall).c_str(), rate / 1e3, batch_rate / rate);
      if (!error.empty()) std::printf("  failed: %s\n", error.c_str());
    }
    std::printf("%-5d %-26s %-9s %-13.1f %.1f\n", n, "one batched LU", Seconds(batch.wall).c_str(),
                batch_rate / 1e3, 1.0);
    if (!batch.error.empty()) std::printf("  failed: %s\n", batch.error.c_str());
  }
}

}  // namespace matrixd::bench
