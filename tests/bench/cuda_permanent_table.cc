// Real Glynn permanents on the GPU next to the FP64 floor 2^(n-1) * 2n / rate: a Glynn walk has
// 2^(n-1) terms, each updating n row sums and multiplying them (one add and one multiply per row).
// The rate is measured in the same run (cuBLAS DGEMM, a stand-in for the FP64 peak) and computed
// from the device (FP64 instruction issue rate, the model of core/cuda/permanent.cu). Each order
// runs both precisions on dense matrices with entries k / 2^20 ("grid": exact row sums) and
// uniform in [-1, 1) ("real": double-double row sums under EXTENDED), and the dense and sparse
// walks on perm_density-dense ones.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda/permanent.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"
#include "tests/bench/cuda_device_timing.h"
#include "tests/bench/permanent_inputs.h"

namespace matrixd::bench {
namespace {

// The nominal FP64 (tensor core) peak of an H100 SXM, from NVIDIA's data sheet: printed for
// reference, never used as a measurement.
constexpr double kH100SxmNominalFp64 = 67e12;

// FP64 units per SM by compute capability (NVIDIA's architecture white papers); 0 when unknown.
int Fp64LanesPerSm(const cudaDeviceProp& p) {
  if (p.major == 9 && p.minor == 0) return 64;  // H100, H200
  if (p.major == 8 && p.minor == 0) return 32;  // A100
  if (p.major == 7 && p.minor == 0) return 32;  // V100
  return 0;
}

// FP64 instructions per second the SMs can issue (an FMA is one): SMs x FP64 lanes x clock.
double Fp64IssueRate(const cuda::DeviceContext& context) {
  int clock_khz = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, context.device()) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return NAN;
  }
  const cudaDeviceProp& p = context.properties();
  const int lanes = Fp64LanesPerSm(p);
  return lanes > 0 ? static_cast<double>(p.multiProcessorCount) * lanes * clock_khz * 1e3 : NAN;
}

}  // namespace

void BenchPermanent(Backend& gpu, cuda::DeviceContext& context, const Flags& flags) {
  const int gemm_n = flags.gemm_n;
  const Matrix ga = RandomMatrix(gemm_n, gemm_n, DType::kFloat64, 9);
  const Matrix gb = RandomMatrix(gemm_n, gemm_n, DType::kFloat64, 10);
  const absl::StatusOr<double> dgemm = TimeCublasGemm(context, ga, gb, false, flags.repeats);
  const double dgemm_rate =
      dgemm.ok() ? 2.0 * gemm_n * static_cast<double>(gemm_n) * gemm_n / *dgemm : NAN;
  const double issue_rate = Fp64IssueRate(context);
  const cudaDeviceProp& p = context.properties();
  PrintHeader(
      "Permanent, float64, Glynn (backend Permanent): ours vs the FP64 floor 2^(n-1) * 2n / rate",
      "one row per matrix kind, precision and walk; the floors once per order",
      {"ours: backend call (preparation + walk + reduction); walk: its walk kernels "
       "(stats.kernels), device time",
       absl::StrCat("rate A: cuBLAS DGEMM n = ", gemm_n, " measured now, ",
                    Significant(dgemm_rate / 1e12),
                    " TFLOP/s (a fair stand-in for the FP64 peak; it counts an FMA as 2 flops)"),
       absl::StrCat("rate B: FP64 issue rate ", p.multiProcessorCount, " SMs x ", Fp64LanesPerSm(p),
                    " FP64 lanes x boost clock = ", Significant(issue_rate / 1e12),
                    " T instructions/s (an FMA is one; the model in core/cuda/permanent.cu)"),
       absl::StrCat("for reference only: H100 SXM nominal FP64 tensor-core peak ",
                    Significant(kH100SxmNominalFp64 / 1e12), " TFLOP/s (a constant, not measured)"),
       "targets at n = 36 (issue 13): grid extended <= 4x floor B, grid fast <= 2x floor B; "
       "grid-sparse sparse walk >= 1.5x faster than its dense walk, same value"});
  if (!dgemm.ok()) {
    std::printf("  DGEMM failed: %s\n", std::string(dgemm.status().ToString()).c_str());
  }
  // One row of the table: a matrix kind and the options it runs with.
  struct Case {
    const char* matrix;
    bool grid;    // entries k / 2^20, else uniform in [-1, 1)
    bool sparse;  // perm_density of the entries non-zero
    PermanentPrecision precision;
    PermanentWalk walk;
  };
  constexpr PermanentPrecision kExtended = PermanentPrecision::kExtended;
  constexpr PermanentPrecision kFast = PermanentPrecision::kFast;
  constexpr PermanentWalk kDense = PermanentWalk::kDense;
  constexpr PermanentWalk kSparse = PermanentWalk::kSparse;
  const Case cases[] = {
      {"grid", true, false, kExtended, kDense},
      {"grid", true, false, kFast, kDense},
      {"real", false, false, kExtended, kDense},
      {"real", false, false, kFast, kDense},
      {"grid-sparse", true, true, kExtended, kDense},
      {"grid-sparse", true, true, kExtended, kSparse},
      {"grid-sparse", true, true, kFast, kDense},
      {"grid-sparse", true, true, kFast, kSparse},
      {"real-sparse", false, true, kExtended, kDense},
      {"real-sparse", false, true, kExtended, kSparse},
  };
  std::printf("  sparse matrices: %s of the entries non-zero\n",
              Significant(flags.perm_density).c_str());
  std::printf("%-4s %-12s %-9s %-7s %-9s %-9s %-12s %-12s %s\n", "n", "matrix", "precision", "walk",
              "ours(s)", "walk(s)", "ours/floorA", "ours/floorB", "value");
  for (const int n : {flags.perm_n - 4, flags.perm_n - 2, flags.perm_n}) {
    if (n < 1) continue;
    const GridMatrix grid = RandomGridMatrix(n, false, 1.0, 900 + n);
    const GridMatrix grid_sparse = RandomGridMatrix(n, false, flags.perm_density, 1900 + n);
    const Matrix real = RandomMatrix(n, n, DType::kFloat64, 900 + n);
    Matrix real_sparse = RandomMatrix(n, n, DType::kFloat64, 1900 + n);
    {
      // The same sparsity as grid_sparse, so the two sparse rows differ only in their entries.
      const std::span<const double> pattern = grid_sparse.values.As<double>();
      const std::span<double> entries = real_sparse.As<double>();
      for (size_t q = 0; q < entries.size(); ++q) {
        if (pattern[q] == 0.0) entries[q] = 0.0;
      }
    }
    const double work = std::ldexp(2.0 * n, n - 1);  // 2^(n-1) terms x 2n operations
    const double floor_a = work / dgemm_rate;
    const double floor_b = work / issue_rate;
    for (const Case& c : cases) {
      // The sparse walk once per asked head size (cuda::SetSparsePermanentHeadRows).
      for (const int head_rows : c.walk == kSparse ? flags.perm_head_rows : std::vector<int>{-1}) {
        cuda::SetSparsePermanentHeadRows(head_rows);
        const std::string walk_name =
            c.walk != kSparse ? "dense"
            : head_rows < 0   ? "sparse"
                              : absl::StrCat(head_rows == 0 ? "block" : "head", head_rows);
        const Matrix& a = c.grid ? (c.sparse ? grid_sparse.values : grid.values)
                                 : (c.sparse ? real_sparse : real);
        PermanentOptions options;
        options.method = PermanentMethod::kGlynn;
        options.precision = c.precision;
        options.walk = c.walk;
        double value = NAN;
        const Timing ours = TimeOperation(flags.repeats, [&] {
          absl::StatusOr<PermanentResult> result = gpu.Permanent(a.view(), options, nullptr);
          if (result.ok()) value = result->value.real();
          return result;
        });
        std::printf("%-4d %-12s %-9s %-7s %-9s %-9s %-12s %-12s %.17g\n", n, c.matrix,
                    c.precision == kFast ? "fast" : "extended", walk_name.c_str(),
                    Seconds(ours.seconds).c_str(), Seconds(ours.device).c_str(),
                    Ratio(ours.seconds, floor_a).c_str(), Ratio(ours.seconds, floor_b).c_str(),
                    value);
        if (!ours.error.empty()) std::printf("  ours failed: %s\n", ours.error.c_str());
      }
    }
    cuda::SetSparsePermanentHeadRows(-1);
    std::printf("%-4d floor A %s s, floor B %s s\n", n, Significant(floor_a).c_str(),
                Significant(floor_b).c_str());
  }
}

}  // namespace matrixd::bench
