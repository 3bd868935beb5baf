// The 1-norm's pass on the GPU (part of the `condition` table): what ||A||_1 costs a condition
// estimate when a kernel of its own reads A (LaunchColumnAbsSums) against when the pass that
// brings A into the factorization's layout takes it on the way: the LU factorization's transpose
// (LaunchTransposeWithAbsSums) and the determinant's row scaling (LaunchScaleRows with its row
// sums), each next to the same pass without the sums. Float64, median device microseconds.
#include <cstdio>
#include <string>

#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"
#include "core/cuda/norm_kernels.h"
#include "core/status_macros.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/cuda_device_timing.h"

namespace matrixd::bench {
namespace {

absl::Status NormPassRow(cuda::DeviceContext& context, int n, int repeats) {
  const Matrix a = RandomMatrix(n, n, DType::kFloat64, 4242 + n);
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer source, UploadMatrix(context, a));
  const size_t bytes = a.byte_size();
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer copy, context.Allocate(bytes));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer sums, context.Allocate(sizeof(double) * n));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer partials,
                           context.Allocate(sizeof(double) * cuda::TransposeSumPartials(n, n)));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer summary,
                           context.Allocate(sizeof(cuda::DeterminantSummary)));
  const cudaStream_t stream = context.stream();
  const auto timed = [&](auto&& launch) {
    return TimeOnDevice(context, repeats, NoPreparation, [&]() -> absl::Status {
      MATRIXD_CUDA_RETURN_IF_ERROR(launch());
      return absl::OkStatus();
    });
  };
  MATRIXD_ASSIGN_OR_RETURN(const double column_sums, timed([&] {
                             return cuda::LaunchColumnAbsSums(source.as<const double>(), n, n, n,
                                                              false, sums.as<double>(), stream);
                           }));
  MATRIXD_ASSIGN_OR_RETURN(const double transpose, timed([&] {
                             return cuda::LaunchTranspose(cuda::AsSpan<const double>(source), n, n,
                                                          n, cuda::AsSpan<double>(copy), n, stream);
                           }));
  MATRIXD_ASSIGN_OR_RETURN(const double transpose_sums, timed([&] {
                             return cuda::LaunchTransposeWithAbsSums(
                                 source.as<const double>(), n, n, n, copy.as<double>(), n,
                                 partials.as<double>(), sums.as<double>(), stream);
                           }));
  const auto scale = [&](double* row_sums) {
    return timed([&] {
      return cuda::LaunchScaleRows(source.as<const double>(), copy.as<double>(), n, n,
                                   summary.as<cuda::DeterminantSummary>(), stream, row_sums);
    });
  };
  MATRIXD_ASSIGN_OR_RETURN(const double scale_plain, scale(nullptr));
  MATRIXD_ASSIGN_OR_RETURN(const double scale_sums, scale(sums.as<double>()));
  std::printf("%-6d %-12s %-12s %-16s %-12s %-16s %s\n", n, Microseconds(column_sums).c_str(),
              Microseconds(transpose).c_str(), Microseconds(transpose_sums).c_str(),
              Microseconds(scale_plain).c_str(), Microseconds(scale_sums).c_str(),
              Microseconds(column_sums - (transpose_sums - transpose)).c_str());
  return absl::OkStatus();
}

}  // namespace

void BenchNormPass(cuda::DeviceContext& context, const Flags& flags) {
  PrintHeader("The 1-norm's pass on the GPU, float64: median device microseconds",
              "n      norm alone   transpose    transpose+sums   scale rows   scale rows+sums  "
              "saved (LU)",
              {"norm alone: LaunchColumnAbsSums over A (the estimate's own pass, as Cholesky and "
               "QR still take it); transpose: the LU upload's layout change, +sums: with ||A||_1's "
               "column sums taken in it (LaunchTransposeWithAbsSums, what LU Factorize runs "
               "now); scale rows: the LU determinant's row scaling, +sums: with its row sums (what "
               "it runs now)",
               "saved (LU): norm alone minus what the sums add to the transpose"});
  RowsBySize(flags.condition_sizes, [&](int n) { return NormPassRow(context, n, flags.repeats); });
}

}  // namespace matrixd::bench
