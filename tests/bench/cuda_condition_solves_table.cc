// Where the GPU condition estimate's time goes (issue 15): on cuSOLVER LU factors already on the
// device, one getrs with 1 and with 2 right-hand sides next to the estimator's own LU solve
// (DeviceFactorSolves, core/cuda/factor_solves.h) without and with near tiles; the whole device
// estimate (wall clock) on those solves and on getrs, with its number of block solves; then each
// triangle alone next to cuBLAS dtrsv for every block size and near-tile count (device time
// between events). Part of the `condition` table set, float64, at flags.condition_sizes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <string>
#include <tuple>
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

// The cluster sizes the triangle table times beside none (core/cuda/triangular_solve.h).
constexpr int kClusterColumns[] = {4, 8, 16};

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
  int solves = 0;  // block solves, counted by the estimates below
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

  // The estimator's LU solve without and with near tiles (its first Apply also prepares: inverts
  // the diagonal blocks, computes the near tiles).
  std::vector<int> pivots(static_cast<size_t>(n));
  MATRIXD_RETURN_IF_ERROR(context.Download(ints, pivots.data(), pivots.size() * sizeof(int)));
  std::vector<cuda::DeviceFactorSolves<double>> lu;  // near tiles 0 and kDefaultNearTiles
  for (const int near : {0, cuda::kDefaultNearTiles}) {
    MATRIXD_ASSIGN_OR_RETURN(
        cuda::DeviceFactorSolves<double> entry,
        cuda::DeviceFactorSolves<double>::Lu(context, factors.as<const double>(), n, n, pivots));
    entry.set_near_tiles(near);
    lu.push_back(std::move(entry));
  }
  std::vector<double> lu_solve;
  for (auto& factor_solves : lu) {
    MATRIXD_ASSIGN_OR_RETURN(const double seconds, TimeOnDevice(context, repeats, zero_x, [&] {
                               return factor_solves.Apply(false, x.data(), 1);
                             }));
    lu_solve.push_back(seconds);
  }
  // Two right-hand sides through one chain (with near tiles).
  MATRIXD_ASSIGN_OR_RETURN(const double lu_solve_two, TimeOnDevice(context, repeats, zero_x, [&] {
                             return lu.back().Apply(false, x.data(), 2);
                           }));

  // The median wall seconds of the whole estimate on `apply` with a block of `columns`, and its
  // number of block solves.
  const auto time_estimate = [&](const auto& apply,
                                 int columns) -> absl::StatusOr<std::pair<double, int>> {
    std::vector<double> seconds;
    int solves_per_estimate = 0;
    for (int r = 0; r < repeats + 1; ++r) {
      solves = 0;
      ComputeStats stats;
      const auto start = std::chrono::steady_clock::now();
      MATRIXD_ASSIGN_OR_RETURN(
          const double rcond,
          cuda::DeviceReciprocalCondition<double>(context, n, 1.0, cuda::DeviceInverseApply(apply),
                                                  &stats, columns));
      (void)rcond;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (r > 0) seconds.push_back(elapsed);  // the first is a warm-up
      solves_per_estimate = solves;
    }
    return std::make_pair(Median(seconds), solves_per_estimate);
  };
  // 1 column without and with near tiles, then 2 columns with near tiles.
  std::vector<std::pair<double, int>> estimates;
  for (const auto& [factor_solves, columns] :
       {std::pair{&lu.front(), 1}, std::pair{&lu.back(), 1}, std::pair{&lu.back(), 2}}) {
    MATRIXD_ASSIGN_OR_RETURN(const auto estimate,
                             time_estimate(
                                 [&](bool adjoint, void* b, int block_columns) {
                                   ++solves;
                                   return factor_solves->Apply(adjoint, b, block_columns);
                                 },
                                 columns));
    estimates.push_back(estimate);
  }
  MATRIXD_ASSIGN_OR_RETURN(const auto estimate_getrs,
                           time_estimate(getrs, cuda::kDeviceEstimateColumns));
  std::printf("%-6d %-10s %-10s %-10s %-10s %-10s %-10s %-10s %-10s %-7d %-10s %-7d %-10s %s\n", n,
              Seconds(getrf).c_str(), Seconds(one).c_str(), Seconds(two).c_str(),
              Microseconds(lu_solve[0]).c_str(), Microseconds(lu_solve[1]).c_str(),
              Microseconds(lu_solve_two).c_str(), Seconds(estimates[0].first).c_str(),
              Seconds(estimates[1].first).c_str(), estimates[1].second,
              Seconds(estimates[2].first).c_str(), estimates[2].second,
              Percent(estimates[1].first, getrf).c_str(), Seconds(estimate_getrs.first).c_str());
  return absl::OkStatus();
}

// The triangles of one LU at order n, one at a time (L unit lower, forward; U^T the transposed
// upper, the adjoint's first solve): cuBLAS dtrsv, then core/cuda/triangular_solve.h with each
// block size and 0 .. kMaxNearTiles near tiles, median device microseconds of one solve; and the
// device time of ComputeNearTiles for the most near tiles.
absl::Status TriangleSolvesRow(cuda::DeviceContext& context, int n, int repeats) {
  const Matrix a = RandomMatrix(n, n, DType::kFloat64, 21);
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer factors, UploadMatrix(context, a));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer ints, context.Allocate(sizeof(int) * (n + 1)));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer x, context.Allocate(sizeof(double) * 2 * n));
  int workspace_elements = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnDgetrf_bufferSize(
      context.cusolver(), n, n, factors.as<double>(), n, &workspace_elements));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer workspace,
                           context.Allocate(sizeof(double) * std::max(workspace_elements, 1)));
  MATRIXD_CUDA_RETURN_IF_ERROR(cusolverDnDgetrf(context.cusolver(), n, n, factors.as<double>(), n,
                                                workspace.as<double>(), ints.as<int>(),
                                                ints.as<int>() + n));
  const auto zero_x = [&]() -> absl::Status {
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(x.data(), 0, sizeof(double) * 2 * n, context.stream()));
    return absl::OkStatus();
  };
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer sync,
                           context.Allocate(cuda::kTriangularSolveSyncBytes));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(sync.data(), 0, cuda::kTriangularSolveSyncBytes, context.stream()));
  const cuda::DeviceTriangle<double> lower{
      .a = factors.as<const double>(), .n = n, .lda = n, .lower = true, .unit_diagonal = true};
  const cuda::DeviceTriangle<double> upper{
      .a = factors.as<const double>(), .n = n, .lda = n, .lower = false, .unit_diagonal = false};
  for (const auto& [name, triangle, transpose] :
       {std::tuple{"L", lower, false}, std::tuple{"U^T", upper, true}}) {
    std::vector<std::string> cells;
    MATRIXD_ASSIGN_OR_RETURN(
        const double trsv, TimeOnDevice(context, repeats, zero_x, [&] {
          MATRIXD_CUDA_RETURN_IF_ERROR(cublasDtrsv(
              context.cublas(), triangle.lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER,
              transpose ? CUBLAS_OP_T : CUBLAS_OP_N,
              triangle.unit_diagonal ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT, n,
              factors.as<const double>(), n, x.as<double>(), 1));
          return absl::OkStatus();
        }));
    cells.push_back(Microseconds(trsv));
    double prepare = 0.0;
    double invert = 0.0;
    double two_columns = 0.0;
    for (const int block : {64, 128}) {
      MATRIXD_ASSIGN_OR_RETURN(
          cuda::DeviceBuffer inverse,
          context.Allocate(sizeof(double) * cuda::DiagonalInverseElements(n, block)));
      MATRIXD_ASSIGN_OR_RETURN(const double invert_seconds,
                               TimeOnDevice(context, repeats, NoPreparation, [&] {
                                 MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchInvertDiagonalBlocks(
                                     triangle, block, inverse.as<double>(), context.stream()));
                                 return absl::OkStatus();
                               }));
      MATRIXD_ASSIGN_OR_RETURN(
          cuda::DeviceBuffer near,
          context.Allocate(sizeof(double) * cuda::NearTileElements(n, block, cuda::kMaxNearTiles)));
      MATRIXD_ASSIGN_OR_RETURN(const double near_seconds,
                               TimeOnDevice(context, repeats, NoPreparation, [&] {
                                 MATRIXD_CUDA_RETURN_IF_ERROR(cuda::ComputeNearTiles(
                                     context.cublas(), triangle, block, inverse.as<const double>(),
                                     transpose, cuda::kMaxNearTiles, near.as<double>()));
                                 return absl::OkStatus();
                               }));
      // Near tiles 0 .. kMaxNearTiles with one column without clusters, then kMaxNearTiles in
      // clusters of each size; at the estimator's block, kMaxNearTiles with two columns.
      const auto time_solve = [&](int count, int columns, int cluster) {
        return TimeOnDevice(context, repeats, zero_x, [&] {
          MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchTriangularSolve(
              triangle, block, inverse.as<const double>(), transpose, x.as<const double>(),
              x.as<double>(), sync.data(), context.stream(), near.as<const double>(), count,
              columns, cluster));
          return absl::OkStatus();
        });
      };
      for (int count = 0; count <= cuda::kMaxNearTiles; ++count) {
        MATRIXD_ASSIGN_OR_RETURN(const double solve, time_solve(count, 1, 1));
        cells.push_back(Microseconds(solve));
      }
      for (const int cluster : kClusterColumns) {
        MATRIXD_ASSIGN_OR_RETURN(const double solve, time_solve(cuda::kMaxNearTiles, 1, cluster));
        cells.push_back(Microseconds(solve));
      }
      if (block == cuda::kTriangularSolveBlock<double>) {
        prepare = near_seconds;
        invert = invert_seconds;
        MATRIXD_ASSIGN_OR_RETURN(two_columns,
                                 time_solve(cuda::kMaxNearTiles, 2, cuda::kTriangularSolveCluster));
      }
    }
    std::printf("%-6d %-6s", n, name);
    for (const std::string& cell : cells) std::printf(" %-8s", cell.c_str());
    std::printf(" %-8s %-8s %s\n", Microseconds(two_columns).c_str(), Microseconds(invert).c_str(),
                Microseconds(prepare).c_str());
  }
  return absl::OkStatus();
}

// An LU's four near-tile sets (L and U, op N and H, the most near tiles at the estimator's
// block) one by one (ComputeNearTiles) and together (ComputeNearTileSets, as the estimator's
// preparation runs them): median device microseconds.
absl::Status NearTileSetsRow(cuda::DeviceContext& context, int n, int repeats) {
  constexpr int kBlock = cuda::kTriangularSolveBlock<double>;
  const Matrix a = RandomMatrix(n, n, DType::kFloat64, 77 + n);
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer factors, UploadMatrix(context, a));
  const auto near_bytes =
      sizeof(double) * static_cast<size_t>(cuda::NearTileElements(n, kBlock, cuda::kMaxNearTiles));
  std::vector<cuda::NearTileSet<double>> sets;
  std::vector<cuda::DeviceBuffer> buffers;
  for (const bool lower : {true, false}) {
    const cuda::DeviceTriangle<double> triangle{
        .a = factors.as<const double>(), .n = n, .lda = n, .lower = lower, .unit_diagonal = lower};
    MATRIXD_ASSIGN_OR_RETURN(
        cuda::DeviceBuffer inverse,
        context.Allocate(sizeof(double) * cuda::DiagonalInverseElements(n, kBlock)));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cuda::LaunchInvertDiagonalBlocks(triangle, kBlock, inverse.as<double>(), context.stream()));
    for (const bool adjoint : {false, true}) {
      MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer near, context.Allocate(near_bytes));
      sets.push_back({.triangle = triangle,
                      .inverse = inverse.as<const double>(),
                      .adjoint = adjoint,
                      .near_tiles = near.as<double>()});
      buffers.push_back(std::move(near));
    }
    buffers.push_back(std::move(inverse));
  }
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer pointers,
                           context.Allocate(static_cast<size_t>(cuda::NearTileSetPointerBytes(
                               n, kBlock, cuda::kMaxNearTiles, static_cast<int>(sets.size())))));
  MATRIXD_ASSIGN_OR_RETURN(const double alone, TimeOnDevice(context, repeats, NoPreparation, [&] {
                             for (const cuda::NearTileSet<double>& set : sets) {
                               MATRIXD_CUDA_RETURN_IF_ERROR(cuda::ComputeNearTiles(
                                   context.cublas(), set.triangle, kBlock, set.inverse, set.adjoint,
                                   cuda::kMaxNearTiles, set.near_tiles));
                             }
                             return absl::OkStatus();
                           }));
  MATRIXD_ASSIGN_OR_RETURN(const double together,
                           TimeOnDevice(context, repeats, NoPreparation, [&] {
                             MATRIXD_CUDA_RETURN_IF_ERROR(cuda::ComputeNearTileSets(
                                 context.cublas(), std::span<const cuda::NearTileSet<double>>(sets),
                                 kBlock, cuda::kMaxNearTiles, pointers.data(), context.stream()));
                             return absl::OkStatus();
                           }));
  std::printf("%-6d %-12s %s\n", n, Microseconds(alone).c_str(), Microseconds(together).c_str());
  return absl::OkStatus();
}

}  // namespace

void BenchConditionSolves(cuda::DeviceContext& context, const Flags& flags) {
  PrintHeader(
      "Condition estimate on the GPU, by part, float64 (cuSOLVER LU factors on the device)",
      "n      getrf      getrs x1   getrs x2   LU us      LU near us LU x2 us   est        "
      "est near   solves  est x2     solves  est/getrf  estimate on getrs",
      {"getrf, getrs: median device seconds of one call (getrs x2: 2 right-hand sides); "
       "LU: DeviceFactorSolves::Apply, one vector, median device microseconds, blocks of " +
           std::to_string(cuda::kTriangularSolveBlock<double>) + " rows, without and with " +
           std::to_string(cuda::kDefaultNearTiles) +
           " near tiles; LU x2: 2 vectors through one "
           "chain, with near tiles",
       "est, est near: median wall seconds of the device block estimator with 1 column on those "
       "solves (prepared: diagonal blocks inverted, near tiles computed), `solves` block solves; "
       "est x2: the estimator with 2 columns (the host's block) on the near-tile solves; "
       "estimate on getrs: the 1-column estimator on cuSOLVER getrs",
       "target (issue 15): est/getrf < 5 % at n >= 4096 (est/getrf: with near tiles)"});
  RowsBySize(flags.condition_sizes,
             [&](int n) { return ConditionSolvesRow(context, n, flags.repeats); });
  PrintHeader("One triangle of an LU, one vector, float64: median device microseconds",
              "n      tri    dtrsv    64/0     64/1     64/2     64c4     64c8     64c16    "
              "128/0    128/1    128/2    128c4    128c8    128c16   x2       invert   near",
              {"dtrsv: cuBLAS; B/k: core/cuda/triangular_solve.h with B-row blocks and k near "
               "tiles, no clusters; BcC: the same with " +
               std::to_string(cuda::kMaxNearTiles) +
               " near tiles in clusters of C blocks; x2: 2 right-hand sides in one solve "
               "(blocks of " +
               std::to_string(cuda::kTriangularSolveBlock<double>) + ", " +
               std::to_string(cuda::kMaxNearTiles) +
               " near tiles, the default cluster); invert: LaunchInvertDiagonalBlocks; near: "
               "ComputeNearTiles for " +
               std::to_string(cuda::kMaxNearTiles) + " near tiles at block " +
               std::to_string(cuda::kTriangularSolveBlock<double>) +
               " (both once per triangle; near tiles once per operation)"});
  RowsBySize(flags.condition_sizes,
             [&](int n) { return TriangleSolvesRow(context, n, flags.repeats); });
  PrintHeader("An LU's near tiles, float64: median device microseconds",
              "n      one by one   together",
              {"one by one: ComputeNearTiles for L and U, op N and H (four sets, eight strided "
               "batches); together: ComputeNearTileSets for the same four sets, as the estimator "
               "prepares them (two batched products and the cut last block's, or one set at a "
               "time beyond " +
               std::to_string(cuda::kMaxGroupedNearProducts) + " products)"});
  RowsBySize(flags.condition_sizes,
             [&](int n) { return NearTileSetsRow(context, n, flags.repeats); });
}

}  // namespace matrixd::bench
