// The verify table: Freivalds' check of a product (Multiply with verify, core/freivalds.h) timed
// by its own kernel record next to the product's, on one backend. Issue 15's target: the check
// under 2 % of the GEMM at n = 8192.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"

namespace matrixd::bench {
namespace {

// Median seconds of each kernel record over the runs, and whether every check passed.
struct VerifiedRuns {
  std::map<std::string, double> kernel_seconds;
  bool passed = true;
  std::string error;
};

VerifiedRuns RunVerified(Backend& backend, const Matrix& a, const Matrix& b, int warm_up,
                         int runs) {
  VerifiedRuns out;
  std::map<std::string, std::vector<double>> samples;
  for (int r = 0; r < warm_up + runs; ++r) {
    auto result = backend.Multiply(a.view(), b.view(), {.verify = true}, nullptr);
    if (!result.ok()) {
      out.error = std::string(result.status().ToString());
      return out;
    }
    out.passed = out.passed && result->check.has_value() && result->check->passed;
    if (r < warm_up) continue;
    for (const KernelRecord& record : result->stats.kernels) {
      samples[record.kernel].push_back(record.seconds);
    }
  }
  for (auto& [kernel, seconds] : samples) out.kernel_seconds[kernel] = Median(seconds);
  return out;
}

}  // namespace

void BenchVerify(const std::string& label, Backend& backend, const Flags& flags, int warm_up,
                 int runs) {
  PrintHeader(
      "Freivalds' check of C = A B, n x n, " + label + " (Multiply with verify)",
      "dtype      n      gemm(s)    check(s)   check/gemm  check GB/s  passed",
      {"gemm: the product's kernel record (cublas_gemm / gemm); check: the record \"freivalds\" "
       "(8 sign vectors: thin gemms over B, A and C, Frobenius norms of A and B; GPU: two m x 8 "
       "downloads)",
       "check GB/s: the bytes of A, B and C (each read once by its thin gemm) over the check's "
       "time; nrm2 reads A and B once more",
       "target (issue 15): check/gemm < 2 % at n = 8192 (see docs/accuracy.md for what the memory "
       "bandwidth allows)"});
  struct Case {
    const char* name;
    DType dtype;
  };
  for (const int n : flags.verify_sizes) {
    for (const Case& c : {Case{"float64", DType::kFloat64}, Case{"float32", DType::kFloat32}}) {
      const Matrix a = RandomMatrix(n, n, c.dtype, 11);
      const Matrix b = RandomMatrix(n, n, c.dtype, 12);
      const VerifiedRuns r = RunVerified(backend, a, b, warm_up, runs);
      if (!r.error.empty()) {
        std::printf("%-10s %-6d failed: %s\n", c.name, n, r.error.c_str());
        continue;
      }
      const auto seconds_of = [&](const char* kernel) {
        const auto it = r.kernel_seconds.find(kernel);
        return it == r.kernel_seconds.end() ? NAN : it->second;
      };
      const double gemm =
          std::isnan(seconds_of("cublas_gemm")) ? seconds_of("gemm") : seconds_of("cublas_gemm");
      const double check = seconds_of("freivalds");
      const double bytes = 3.0 * static_cast<double>(a.byte_size());
      std::printf("%-10s %-6d %-10s %-10s %-11s %-11s %s\n", c.name, n, Seconds(gemm).c_str(),
                  Seconds(check).c_str(), Percent(check, gemm).c_str(),
                  Rate(bytes, check, 1e9).c_str(), r.passed ? "yes" : "NO");
    }
  }
}

}  // namespace matrixd::bench
