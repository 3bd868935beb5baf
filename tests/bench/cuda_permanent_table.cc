// Real Glynn permanents on the GPU next to the FP64 floor 2^(n-1) * 2n / rate: a Glynn walk has
// 2^(n-1) terms, each updating n row sums and multiplying them (one add and one multiply per row).
// The rate is measured in the same run (cuBLAS DGEMM, a stand-in for the FP64 peak) and computed
// from the device (FP64 instruction issue rate, the model of core/cuda/permanent.cu).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"
#include "tests/bench/cuda_device_timing.h"

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
      "n    ours(s)   walk(s)   floor A(s)  ours/floor A  floor B(s)  ours/floor B",
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
       "target: ours <= 2x the floor at n = 36"});
  if (!dgemm.ok()) {
    std::printf("  DGEMM failed: %s\n", std::string(dgemm.status().ToString()).c_str());
  }
  PermanentOptions options;
  options.method = PermanentMethod::kGlynn;
  for (const int n : {flags.perm_n - 4, flags.perm_n - 2, flags.perm_n}) {
    if (n < 1) continue;
    const Matrix a = RandomMatrix(n, n, DType::kFloat64, 900 + n);
    const Timing ours =
        TimeOperation(flags.repeats, [&] { return gpu.Permanent(a.view(), options, nullptr); });
    const double work = std::ldexp(2.0 * n, n - 1);  // 2^(n-1) terms x 2n operations
    const double floor_a = work / dgemm_rate;
    const double floor_b = work / issue_rate;
    std::printf("%-4d %-9s %-9s %-11s %-13s %-11s %s\n", n, Seconds(ours.seconds).c_str(),
                Seconds(ours.device).c_str(), Significant(floor_a).c_str(),
                Ratio(ours.seconds, floor_a).c_str(), Significant(floor_b).c_str(),
                Ratio(ours.seconds, floor_b).c_str());
    if (!ours.error.empty()) std::printf("  ours failed: %s\n", ours.error.c_str());
  }
}

}  // namespace matrixd::bench
