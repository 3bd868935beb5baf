// The verify table: Freivalds' check of a product (Multiply with verify, core/freivalds.h) next
// to the same product unverified, on one backend, for each way of running the check that the
// caller names (the CUDA backend: our kernels beside the upload with A's part piece by piece as
// it lands, with B's part only, our kernels after the product, cuBLAS after it). What the check
// costs a caller is the product's kernel record plus the check's record after it, against the
// unverified product's record (the two alternate run by run). Issue 15's target: under 2 % at
// n = 8192.
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

// Median seconds of each kernel record over the runs, the bytes it says it moved, and whether
// every check passed.
struct Runs {
  std::map<std::string, double> kernel_seconds;
  std::map<std::string, uint64_t> kernel_bytes;
  bool passed = true;
  std::string error;

  double Seconds(const std::string& kernel) const {
    const auto it = kernel_seconds.find(kernel);
    return it == kernel_seconds.end() ? NAN : it->second;
  }
  double Bytes(const std::string& kernel) const {
    const auto it = kernel_bytes.find(kernel);
    return it == kernel_bytes.end() ? NAN : static_cast<double>(it->second);
  }
  // The product's own record (dense GPU: cublas_gemm; CPU: gemm).
  double Gemm() const {
    const double cublas = Seconds("cublas_gemm");
    return std::isnan(cublas) ? Seconds("gemm") : cublas;
  }
};

// Adds one product's records to `samples` (unless it is a warm-up) and its verdict to `runs`;
// false (with runs->error) when it failed.
bool RunProduct(Backend& backend, const Matrix& a, const Matrix& b, bool verify, bool warm_up,
                Runs* runs, std::map<std::string, std::vector<double>>* samples) {
  auto result = backend.Multiply(a.view(), b.view(), {.verify = verify}, nullptr);
  if (!result.ok()) {
    runs->error = std::string(result.status().ToString());
    return false;
  }
  if (verify) runs->passed = runs->passed && result->check.has_value() && result->check->passed;
  if (warm_up) return true;
  for (const KernelRecord& record : result->stats.kernels) {
    (*samples)[record.kernel].push_back(record.seconds);
    runs->kernel_bytes[record.kernel] = record.bytes;
  }
  return true;
}

// The unverified product (index 0) and each setting's verified one (1 + i), interleaved run by
// run, so that the host's and the card's drift (the GEMM's time moves by ~1 % between blocks of
// runs) falls on all of them alike.
std::vector<Runs> RunInterleaved(Backend& backend, const Matrix& a, const Matrix& b,
                                 const std::vector<VerifySetting>& settings,
                                 const std::function<void()>& restore_defaults, int warm_up,
                                 int runs) {
  std::vector<Runs> out(settings.size() + 1);
  std::vector<std::map<std::string, std::vector<double>>> samples(out.size());
  for (int r = 0; r < warm_up + runs; ++r) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i].error.empty()) continue;
      if (i > 0) settings[i - 1].apply();
      RunProduct(backend, a, b, /*verify=*/i > 0, r < warm_up, &out[i], &samples[i]);
      restore_defaults();
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    for (auto& [kernel, seconds] : samples[i]) out[i].kernel_seconds[kernel] = Median(seconds);
  }
  return out;
}

}  // namespace

void BenchVerify(const std::string& label, Backend& backend, const Flags& flags, int warm_up,
                 int runs, const std::vector<VerifySetting>& settings,
                 const std::function<void()>& restore_defaults) {
  PrintHeader(
      "Freivalds' check of C = A B, n x n, " + label + " (Multiply with verify)",
      "dtype      n      setting   gemm(ms)   gemm+v(ms) check(ms)  beside(ms) added   check   "
      "check GB/s  passed",
      {"gemm: the product's kernel record unverified; gemm+v: the same record in the verified "
       "call; check: what the check adds to the product's stream, the records \"freivalds_wait\" "
       "(pieces: the product's wait for the second stream) and \"freivalds\" (its part after the "
       "product: W = C X, plus Z = A Y with ||A|| for A's last piece or all of A, plus Y = B X "
       "unless it ran beside; includes the small downloads); beside: \"freivalds_b\" (Y = B X and "
       "||B|| on a second stream while A was uploaded)",
       "added = (gemm+v + check - gemm) / gemm: what verify costs; check = check / gemm (without "
       "the GEMM's own spread); check GB/s: the bytes the record \"freivalds\" reads (C, and what "
       "of A and B "
       "did not run beside) over check's time",
       "the unverified and each setting's verified product alternate run by run (medians)",
       "8 sign vectors; target (issue 15): added < 2 % at n = 8192 (docs/accuracy.md: reading C "
       "once at copy bandwidth is ~1 % of a float64 GEMM there, A, B and C ~2.9 %)"});
  struct Case {
    const char* name;
    DType dtype;
  };
  for (const int n : flags.verify_sizes) {
    for (const Case& c : {Case{"float64", DType::kFloat64}, Case{"float32", DType::kFloat32}}) {
      const Matrix a = RandomMatrix(n, n, c.dtype, 11);
      const Matrix b = RandomMatrix(n, n, c.dtype, 12);
      const std::vector<Runs> all =
          RunInterleaved(backend, a, b, settings, restore_defaults, warm_up, runs);
      const Runs& plain = all[0];
      if (!plain.error.empty()) {
        std::printf("%-10s %-6d failed: %s\n", c.name, n, plain.error.c_str());
        continue;
      }
      for (size_t i = 0; i < settings.size(); ++i) {
        const VerifySetting& setting = settings[i];
        const Runs& verified = all[i + 1];
        if (!verified.error.empty()) {
          std::printf("%-10s %-6d %-9s failed: %s\n", c.name, n, setting.name.c_str(),
                      verified.error.c_str());
          continue;
        }
        const double gemm = plain.Gemm();
        const double gemm_verified = verified.Gemm();
        const double wait = verified.Seconds("freivalds_wait");
        // What the check adds to the product's stream: its record after the product and the
        // product's wait for the side lane.
        const double check = verified.Seconds("freivalds") + (std::isnan(wait) ? 0.0 : wait);
        const double beside = verified.Seconds("freivalds_b");
        const double added = gemm_verified + check - gemm;
        const double bytes = verified.Bytes("freivalds");
        std::printf("%-10s %-6d %-9s %-10s %-10s %-10s %-10s %-7s %-7s %-11s %s\n", c.name, n,
                    setting.name.c_str(), Milliseconds(gemm).c_str(),
                    Milliseconds(gemm_verified).c_str(), Milliseconds(check).c_str(),
                    Milliseconds(beside).c_str(), PercentTenths(added, gemm).c_str(),
                    PercentTenths(check, gemm).c_str(), Rate(bytes, check, 1e9).c_str(),
                    verified.passed ? "yes" : "NO");
      }
    }
  }
}

}  // namespace matrixd::bench
