// The refine table: an LU solve of a float64 system refined (core/refinement.h) with float32,
// TF32 and float64 factors, next to the plain getrf + getrs solve, on one backend; and the
// deterministic table: each operation with and without what a deterministic request changes.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"

namespace matrixd::bench {
namespace {

// The median seconds of the kernel record `kernel` over the timed runs, NaN when absent.
struct RefinedRuns {
  Timing timing;
  double kernel = NAN;
  std::optional<Refinement> refinement;
};

RefinedRuns RunSolve(Backend& backend, const Matrix& a, const Matrix& b,
                     const FactorizeOptions& options, const char* kernel, int warm_up, int runs) {
  RefinedRuns out;
  std::vector<double> kernel_seconds;
  const MatrixView rhs = b.view();
  out.timing = TimeRuns(warm_up, runs, [&]() -> absl::StatusOr<FactorizeResult> {
    absl::StatusOr<FactorizeResult> result = backend.Factorize(a.view(), options, &rhs, nullptr);
    if (!result.ok()) return result;
    out.refinement = result->refinement;
    for (const KernelRecord& record : result->stats.kernels) {
      if (record.kernel == kernel) kernel_seconds.push_back(record.seconds);
    }
    return result;
  });
  if (kernel_seconds.size() > static_cast<size_t>(warm_up)) {
    kernel_seconds.erase(kernel_seconds.begin(), kernel_seconds.begin() + warm_up);
    out.kernel = Median(kernel_seconds);
  }
  return out;
}

}  // namespace

void BenchRefine(const std::string& label, Backend& backend, const Flags& flags, int warm_up,
                 int runs) {
  PrintHeader(
      "Refined LU solve of a float64 n x n system, 1 right-hand side, " + label +
          " (Factorize with refine)",
      "variant         n      call(s)    factor(s)  call/plain  steps  backward error  fell back",
      {"plain: getrf + getrs in float64 (no refinement; returns the factors too)",
       "float32 / tf32: the mixed path (CPU: LAPACK dsgesv, tf32 runs as float32; GPU: cuSOLVER "
       "IRS); no factors returned",
       "float64: same-precision refinement, residuals in double-double",
       "call: the whole backend call (transfers included on the GPU); factor: the kernel record "
       "cusolver_getrf / cusolver_irs_gesv (GPU only)",
       "matrix: entries uniform in [-1, 1) (condition ~1e4 to 1e5)"});
  struct Variant {
    const char* name;
    bool refine;
    RefinePrecision precision;
  };
  for (const int n : flags.refine_sizes) {
    const Matrix a = RandomMatrix(n, n, DType::kFloat64, 31);
    const Matrix b = RandomMatrix(n, 1, DType::kFloat64, 32);
    double plain = NAN;
    for (const Variant& v : {Variant{"plain", false, RefinePrecision::kInput},
                             Variant{"float32", true, RefinePrecision::kFloat32},
                             Variant{"tf32", true, RefinePrecision::kTf32},
                             Variant{"float64", true, RefinePrecision::kInput}}) {
      const FactorizeOptions options{
          .refine = {.enabled = v.refine, .factor_precision = v.precision}};
      const bool mixed = v.refine && v.precision != RefinePrecision::kInput;
      const RefinedRuns r = RunSolve(backend, a, b, options,
                                     mixed ? "cusolver_irs_gesv" : "cusolver_getrf", warm_up, runs);
      if (!r.timing.error.empty()) {
        std::printf("%-15s %-6d failed: %s\n", v.name, n, r.timing.error.c_str());
        continue;
      }
      if (!v.refine) plain = r.timing.wall;
      std::printf("%-15s %-6d %-10s %-10s %-11s %-6s %-15s %s\n", v.name, n,
                  Seconds(r.timing.wall).c_str(), Seconds(r.kernel).c_str(),
                  Ratio(r.timing.wall, plain).c_str(),
                  r.refinement ? std::to_string(r.refinement->iterations).c_str() : "-",
                  r.refinement ? Significant(r.refinement->backward_error).c_str() : "-",
                  r.refinement ? (r.refinement->fell_back ? "yes" : "no") : "-");
    }
  }
}

void BenchDeterministic(const std::string& label, Backend& backend, const Flags& flags, int warm_up,
                        int runs) {
  PrintHeader(
      "deterministic = true against false, " + label + " (the backend calls a request makes)",
      "operation              n      normal(s)  determ.(s) slowdown",
      {"a deterministic request changes the backend call only for Multiply with verify (the "
       "fixed Freivalds seed); the other rows time the same call twice: their difference is the "
       "noise of the measurement",
       "server-side effects (device 0 only, refusals) cost no compute; a multi-GPU server queues "
       "deterministic jobs for device 0 instead of the least busy device"});
  for (const int n : flags.refine_sizes) {
    const Matrix a = RandomMatrix(n, n, DType::kFloat64, 41);
    const Matrix b = RandomMatrix(n, n, DType::kFloat64, 42);
    const Matrix rhs = RandomMatrix(n, 1, DType::kFloat64, 43);
    const MatrixView rhs_view = rhs.view();
    const auto row = [&](const char* name, const Timing& normal, const Timing& deterministic) {
      if (!normal.error.empty() || !deterministic.error.empty()) {
        std::printf("%-22s %-6d failed: %s%s\n", name, n, normal.error.c_str(),
                    deterministic.error.c_str());
        return;
      }
      std::printf("%-22s %-6d %-10s %-10s %s\n", name, n, Seconds(normal.wall).c_str(),
                  Seconds(deterministic.wall).c_str(),
                  Percent(deterministic.wall - normal.wall, normal.wall).c_str());
    };
    const auto multiply = [&](bool deterministic) {
      return TimeRuns(warm_up, runs, [&] {
        return backend.Multiply(a.view(), b.view(),
                                {.verify = true, .deterministic = deterministic}, nullptr);
      });
    };
    row("multiply verify", multiply(false), multiply(true));
    const auto determinant = [&] {
      return TimeRuns(warm_up, runs, [&] { return backend.Determinant(a.view(), {}, nullptr); });
    };
    row("determinant", determinant(), determinant());
    const auto solve = [&] {
      return TimeRuns(warm_up, runs,
                      [&] { return backend.Factorize(a.view(), {}, &rhs_view, nullptr); });
    };
    row("factorize lu + solve", solve(), solve());
    const auto refined = [&] {
      return TimeRuns(warm_up, runs, [&] {
        return backend.Factorize(a.view(), {.refine = {.enabled = true}}, &rhs_view, nullptr);
      });
    };
    row("factorize refine", refined(), refined());
  }
}

}  // namespace matrixd::bench
