// Where the GPU condition estimate's time goes (issue 15): on cuSOLVER LU factors already on the
// device, one getrs with 1 and with 2 right-hand sides next to the estimator's own LU solve
// (DeviceFactorSolves, core/cuda/factor_solves.h) and the triangular solves inside it next to
// cuBLAS dtrsv (device time between events); then the whole device estimate (wall clock) on the
// estimator's solves and on getrs, with its number of block solves. Part of the `condition`
// table set, float64, at flags.condition_sizes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda/condition.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/factor_solves.h"
#include "core/cuda/triangular_solve.h"
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

  // The estimator's LU solve (its first Apply also prepares: inverts the diagonal blocks).
  std::vector<int> pivots(static_cast<size_t>(n));
  MATRIXD_RETURN_IF_ERROR(context.Download(ints, pivots.data(), pivots.size() * sizeof(int)));
  MATRIXD_ASSIGN_OR_RETURN(
      cuda::DeviceFactorSolves<double> lu,
      cuda::DeviceFactorSolves<double>::Lu(context, factors.as<const double>(), n, n, pivots));
  const auto ours = [&](bool adjoint, void* b, int columns) -> absl::Status {
    ++solves;
    return lu.Apply(adjoint, b, columns);
  };
  MATRIXD_ASSIGN_OR_RETURN(const double lu_solve, TimeOnDevice(context, repeats, zero_x, [&] {
                             return ours(false, x.data(), 1);
                           }));
  // One triangle at a time: L (unit lower, forward) and U^T (the adjoint's first solve), by
  // cuBLAS dtrsv and by core/cuda/triangular_solve.h with each block size.
  const cuda::DeviceTriangle<double> lower{
      .a = factors.as<const double>(), .n = n, .lda = n, .lower = true, .unit_diagonal = true};
  const cuda::DeviceTriangle<double> upper{
      .a = factors.as<const double>(), .n = n, .lda = n, .lower = false, .unit_diagonal = false};
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer sync,
                           context.Allocate(cuda::kTriangularSolveSyncBytes));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(sync.data(), 0, cuda::kTriangularSolveSyncBytes, context.stream()));
  // dtrsv's seconds, then ours with 64- and 128-row blocks.
  const auto time_triangle = [&](const cuda::DeviceTriangle<double>& triangle,
                                 bool transpose) -> absl::StatusOr<std::vector<double>> {
    std::vector<double> times;
    MATRIXD_ASSIGN_OR_RETURN(
        const double trsv, TimeOnDevice(context, repeats, zero_x, [&] {
          MATRIXD_CUDA_RETURN_IF_ERROR(cublasDtrsv(
              context.cublas(), triangle.lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER,
              transpose ? CUBLAS_OP_T : CUBLAS_OP_N,
              triangle.unit_diagonal ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT, n,
              factors.as<const double>(), n, x.as<double>(), 1));
          return absl::OkStatus();
        }));
    times.push_back(trsv);
    for (const int block : {64, 128}) {
      MATRIXD_ASSIGN_OR_RETURN(
          cuda::DeviceBuffer inverse,
          context.Allocate(sizeof(double) * cuda::DiagonalInverseElements(n, block)));
      MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchInvertDiagonalBlocks(
          triangle, block, inverse.as<double>(), context.stream()));
      MATRIXD_ASSIGN_OR_RETURN(
          const double solve, TimeOnDevice(context, repeats, zero_x, [&] {
            MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchTriangularSolve(
                triangle, block, inverse.as<const double>(), transpose, x.as<const double>(),
                x.as<double>(), sync.data(), context.stream()));
            return absl::OkStatus();
          }));
      times.push_back(solve);
    }
    return times;
  };
  MATRIXD_ASSIGN_OR_RETURN(const std::vector<double> l_times, time_triangle(lower, false));
  MATRIXD_ASSIGN_OR_RETURN(const std::vector<double> ut_times, time_triangle(upper, true));

  // The median wall seconds of the whole estimate on `apply`, and its number of block solves.
  const auto time_estimate = [&](const auto& apply) -> absl::StatusOr<std::pair<double, int>> {
    std::vector<double> seconds;
    int solves_per_estimate = 0;
    for (int r = 0; r < repeats + 1; ++r) {
      solves = 0;
      ComputeStats stats;
      const auto start = std::chrono::steady_clock::now();
      MATRIXD_ASSIGN_OR_RETURN(const double rcond,
                               cuda::DeviceReciprocalCondition<double>(
                                   context, n, 1.0, cuda::DeviceInverseApply(apply), &stats));
      (void)rcond;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (r > 0) seconds.push_back(elapsed);  // the first is a warm-up
      solves_per_estimate = solves;
    }
    return std::make_pair(Median(seconds), solves_per_estimate);
  };
  MATRIXD_ASSIGN_OR_RETURN(const auto estimate, time_estimate(ours));
  MATRIXD_ASSIGN_OR_RETURN(const auto estimate_getrs, time_estimate(getrs));
  std::printf(
      "%-6d %-10s %-10s %-10s %-10s %-10s %-10s %-10s %-10s %-10s %-10s %-10s %-7d %-10s %s\n", n,
      Seconds(getrf).c_str(), Seconds(one).c_str(), Seconds(two).c_str(), Seconds(lu_solve).c_str(),
      Seconds(l_times[0]).c_str(), Seconds(l_times[1]).c_str(), Seconds(l_times[2]).c_str(),
      Seconds(ut_times[0]).c_str(), Seconds(ut_times[1]).c_str(), Seconds(ut_times[2]).c_str(),
      Seconds(estimate.first).c_str(), estimate.second, Percent(estimate.first, getrf).c_str(),
      Seconds(estimate_getrs.first).c_str());
  return absl::OkStatus();
}

}  // namespace

void BenchConditionSolves(cuda::DeviceContext& context, const Flags& flags) {
  PrintHeader("Condition estimate on the GPU, by part, float64 (cuSOLVER LU factors on the device)",
              "n      getrf      getrs x1   getrs x2   LU solve   dtrsv L    L 64       L 128      "
              "dtrsv U^T  U^T 64     U^T 128    estimate   solves  est/getrf  estimate on getrs",
              {"getrf, getrs, LU solve, dtrsv, L, U^T: median device seconds of one call (getrs "
               "x2: 2 right-hand sides; LU solve: DeviceFactorSolves::Apply, one vector, the "
               "estimator's solve, blocks of " +
                   std::to_string(cuda::kTriangularSolveBlock<double>) +
                   " rows; dtrsv: cuBLAS on one triangle, L unit lower, U^T the transposed "
                   "upper; L 64 ... U^T 128: core/cuda/triangular_solve.h on the same triangle "
                   "with 64- and 128-row blocks)",
               "estimate: median wall seconds of the device block estimator on its own solves "
               "(prepared: the diagonal blocks already inverted), `solves` block solves; "
               "estimate on getrs: the same estimator on cuSOLVER getrs",
               "target (issue 15): est/getrf < 5 % at n >= 4096"});
  for (const int n : flags.condition_sizes) {
    const absl::Status status = ConditionSolvesRow(context, n, flags.repeats);
    if (!status.ok()) std::printf("%-6d failed: %s\n", n, std::string(status.ToString()).c_str());
  }
}

}  // namespace matrixd::bench
