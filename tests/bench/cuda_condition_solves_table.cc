// Where the GPU condition estimate's time goes (issue 15): on cuSOLVER LU factors already on the
// device, one getrs with 1 and with 2 right-hand sides (device time between events), and the
// whole device estimate (DeviceReciprocalCondition on getrs, wall clock) with its number of block
// solves, so that the rest (the small kernels and one synchronisation per solve) is their
// difference. Part of the `condition` table set, float64, at flags.condition_sizes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/cuda/condition.h"
#include "core/cuda/cuda_status.h"
#include "core/status_macros.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"
#include "tests/bench/cuda_device_timing.h"

namespace matrixd::bench {

namespace {

// One row of the table at order n.
absl::Status ConditionSolvesRow(cuda::DeviceContext& context, int n, int repeats) {
  const Matrix a = RandomMatrix(n, n, DType::kFloat64, 21);
  MATRIXD_ASSIGN_OR_RETURN(const double getrf, TimeDgetrf(context, a, repeats));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer factors, UploadMatrix(context, a));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer ints, context.Allocate(sizeof(int) * (n + 1)));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer x, context.Allocate(sizeof(double) * 2 * n));
  int workspace_elements = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnDgetrf_bufferSize(
      context.cusolver(), n, n, factors.as<double>(), n, &workspace_elements));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer workspace,
                           context.Allocate(sizeof(double) * std::max(workspace_elements, 1)));
  int* ipiv = ints.as<int>();
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnDgetrf(context.cusolver(), n, n, factors.as<double>(), n,
                                                workspace.as<double>(), ipiv, ipiv + n));
  int solves = 0;
  const auto getrs = [&](bool adjoint, void* b, int columns) -> absl::Status {
    ++solves;
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cusolverDnDgetrs(context.cusolver(), adjoint ? CUBLAS_OP_T : CUBLAS_OP_N, n, columns,
                         factors.as<double>(), n, ipiv, static_cast<double*>(b), n, ipiv + n));
    return absl::OkStatus();
  };
  const auto zero_x = [&]() -> absl::Status {
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(x.data(), 0, sizeof(double) * 2 * n, context.stream()));
    return absl::OkStatus();
  };
  MATRIXD_ASSIGN_OR_RETURN(const double one, TimeOnDevice(context, repeats, zero_x, [&] {
                             return getrs(false, x.data(), 1);
                           }));
  MATRIXD_ASSIGN_OR_RETURN(const double two, TimeOnDevice(context, repeats, zero_x, [&] {
                             return getrs(false, x.data(), 2);
                           }));

  std::vector<double> seconds;
  int solves_per_estimate = 0;
  for (int r = 0; r < repeats + 1; ++r) {
    solves = 0;
    ComputeStats stats;
    const auto start = std::chrono::steady_clock::now();
    MATRIXD_ASSIGN_OR_RETURN(const double rcond,
                             cuda::DeviceReciprocalCondition<double>(
                                 context, n, 1.0, cuda::DeviceInverseApply(getrs), &stats));
    (void)rcond;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) seconds.push_back(elapsed);  // the first is a warm-up
    solves_per_estimate = solves;
  }
  const double estimate = Median(seconds);
  std::printf("%-6d %-10s %-10s %-10s %-10s %-7d %s\n", n, Seconds(getrf).c_str(),
              Seconds(one).c_str(), Seconds(two).c_str(), Seconds(estimate).c_str(),
              solves_per_estimate, Seconds(estimate - solves_per_estimate * two).c_str());
  return absl::OkStatus();
}

}  // namespace

void BenchConditionSolves(cuda::DeviceContext& context, const Flags& flags) {
  PrintHeader("Condition estimate on the GPU, by part, float64 (cuSOLVER LU factors on the device)",
              "n      getrf      getrs x1   getrs x2   estimate   solves  estimate - solves x2",
              {"getrf, getrs: median device seconds of one call (getrs x2: 2 right-hand sides)",
               "estimate: median wall seconds of the device block estimator on getrs, `solves` "
               "block solves; the last column is what is not solving (kernels, downloads)"});
  for (const int n : flags.condition_sizes) {
    const absl::Status status = ConditionSolvesRow(context, n, flags.repeats);
    if (!status.ok()) std::printf("%-6d failed: %s\n", n, std::string(status.ToString()).c_str());
  }
}

}  // namespace matrixd::bench
