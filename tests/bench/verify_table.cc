// The verify table: Freivalds' check of a product (Multiply with verify, core/freivalds.h) next
// to the same product unverified, on one backend, for each way of running the check that the
// caller names (the CUDA backend: our kernels with B's part beside A's upload, our kernels after
// the product, cuBLAS after it). What the check costs a caller is the product's kernel record
// plus the check's record after it, against the unverified product's record. Issue 15's target:
// under 2 % at n = 8192.
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
struct Runs {
  std::map<std::string, double> kernel_seconds;
  bool passed = true;
  std::string error;

  double Seconds(const std::string& kernel) const {
    const auto it = kernel_seconds.find(kernel);
    return it == kernel_seconds.end() ? NAN : it->second;
  }
  // The product's own record (dense GPU: cublas_gemm; CPU: gemm).
  double Gemm() const {
    const double cublas = Seconds("cublas_gemm");
    return std::isnan(cublas) ? Seconds("gemm") : cublas;
  }
};

Runs RunProducts(Backend& backend, const Matrix& a, const Matrix& b, bool verify, int warm_up,
                 int runs) {
  Runs out;
  std::map<std::string, std::vector<double>> samples;
  for (int r = 0; r < warm_up + runs; ++r) {
    auto result = backend.Multiply(a.view(), b.view(), {.verify = verify}, nullptr);
    if (!result.ok()) {
      out.error = std::string(result.status().ToString());
      return out;
    }
    if (verify) out.passed = out.passed && result->check.has_value() && result->check->passed;
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
                 int runs, const std::vector<VerifySetting>& settings,
                 const std::function<void()>& restore_defaults) {
  PrintHeader(
      "Freivalds' check of C = A B, n x n, " + label + " (Multiply with verify)",
      "dtype      n      setting   gemm(ms)   gemm+v(ms) check(ms)  beside(ms) added   check GB/s"
      "  passed",
      {"gemm: the product's kernel record unverified; gemm+v: the same record in the verified "
       "call; check: the record \"freivalds\" (the check's time after the product: Z = A Y and "
       "W = C X with ||A||, or all of it when nothing ran beside; includes the m x 8 downloads); "
       "beside: \"freivalds_b\" (Y = B X and ||B|| on a second stream while A was uploaded)",
       "added = (gemm+v + check - gemm) / gemm: what verify costs; check GB/s: the bytes the "
       "record's part reads once (A, B and C; A and C with B's part beside) over its time",
       "8 sign vectors; target (issue 15): added < 2 % at n = 8192 (docs/accuracy.md: reading A, "
       "B and C once at copy bandwidth is ~2.9 % of a float64 GEMM there)"});
  struct Case {
    const char* name;
    DType dtype;
  };
  for (const int n : flags.verify_sizes) {
    for (const Case& c : {Case{"float64", DType::kFloat64}, Case{"float32", DType::kFloat32}}) {
      const Matrix a = RandomMatrix(n, n, c.dtype, 11);
      const Matrix b = RandomMatrix(n, n, c.dtype, 12);
      const Runs plain = RunProducts(backend, a, b, false, warm_up, runs);
      if (!plain.error.empty()) {
        std::printf("%-10s %-6d failed: %s\n", c.name, n, plain.error.c_str());
        continue;
      }
      for (const VerifySetting& setting : settings) {
        setting.apply();
        const Runs verified = RunProducts(backend, a, b, true, warm_up, runs);
        restore_defaults();
        if (!verified.error.empty()) {
          std::printf("%-10s %-6d %-9s failed: %s\n", c.name, n, setting.name.c_str(),
                      verified.error.c_str());
          continue;
        }
        const double gemm = plain.Gemm();
        const double gemm_verified = verified.Gemm();
        const double check = verified.Seconds("freivalds");
        const double beside = verified.Seconds("freivalds_b");
        const double added = gemm_verified + check - gemm;
        const double bytes = static_cast<double>(a.byte_size()) * (std::isnan(beside) ? 3.0 : 2.0);
        std::printf("%-10s %-6d %-9s %-10s %-10s %-10s %-10s %-7s %-11s %s\n", c.name, n,
                    setting.name.c_str(), Milliseconds(gemm).c_str(),
                    Milliseconds(gemm_verified).c_str(), Milliseconds(check).c_str(),
                    Milliseconds(beside).c_str(), PercentTenths(added, gemm).c_str(),
                    Rate(bytes, check, 1e9).c_str(), verified.passed ? "yes" : "NO");
      }
    }
  }
}

}  // namespace matrixd::bench
