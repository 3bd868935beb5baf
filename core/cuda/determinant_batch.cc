#include "core/cuda/determinant_batch.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/batch_kernels.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/kernel_timer.h"
#include "core/cuda/library_types.h"
#include "core/status_macros.h"

namespace matrixd::cuda {
namespace {

// Multiplies x by 2^exponent2 in exact steps that stay inside the double range.
void MultiplyByPowerOfTwo(ScaledNumber& x, int64_t exponent2) {
  while (exponent2 != 0) {
    const int64_t step = std::clamp<int64_t>(exponent2, -1000, 1000);
    x *= std::ldexp(1.0, static_cast<int>(step));
    exponent2 -= step;
  }
}

// getrfBatched goes out in slices of at most this many matrices (as factorize_batch.cc does).
constexpr int64_t kMaxMatricesPerCall = 65535;

// Each matrix is read column-major as its transpose, whose determinant is the same: no transpose.
template <typename Source, typename Wide>
absl::StatusOr<BatchedDeterminants> BatchedLu(const MatrixView& a, int64_t count,
                                              DeviceContext& context) {
  using Traits = LibraryTraits<Wide>;
  using Device = typename Traits::Device;
  const int n = static_cast<int>(a.cols);
  const size_t elements = static_cast<size_t>(a.size());
  const cudaStream_t stream = context.stream();
  const size_t summary_bytes = static_cast<size_t>(count) * sizeof(DeterminantSummary);

  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer summaries, context.Allocate(summary_bytes));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(summaries.data(), 0, summary_bytes, stream));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer work, context.Allocate(elements * sizeof(Wide)));
  std::optional<KernelTimer> scale_timer;  // read after the download: no wait in between
  {
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer source, context.Allocate(a.byte_size()));
    MATRIXD_RETURN_IF_ERROR(context.Upload(a.data, source, a.byte_size()));
    MATRIXD_ASSIGN_OR_RETURN(KernelTimer started, KernelTimer::Start(stream));
    scale_timer.emplace(std::move(started));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        LaunchBatchedScaleRows(source.as<const Source>(), work.as<Wide>(), count, n,
                               summaries.as<DeterminantSummary>(), stream));
    MATRIXD_RETURN_IF_ERROR(scale_timer->Stop());
    // `source` goes back to the pool here, stream-ordered after the scaling kernel.
  }
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer pointers,
                           context.Allocate(static_cast<size_t>(count) * sizeof(void*)));
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchFillPointers(
      pointers.as<void*>(), work.data(), static_cast<size_t>(n) * n * sizeof(Wide), count, stream));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer pivots,
                           context.Allocate(static_cast<size_t>(count) * (n + 1) * sizeof(int)));
  int* ipiv = pivots.as<int>();
  int* info = ipiv + count * n;
  Device** lu = pointers.as<Device*>();
  const double nd = static_cast<double>(n);
  const double flops =
      (std::is_same_v<Wide, double> ? 2.0 : 8.0) * nd * nd * nd / 3.0 * static_cast<double>(count);
  MATRIXD_ASSIGN_OR_RETURN(KernelTimer getrf_timer, KernelTimer::Start(stream));
  for (int64_t first = 0; first < count; first += kMaxMatricesPerCall) {
    const int size = static_cast<int>(std::min(count - first, kMaxMatricesPerCall));
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::getrf_batched(context.cublas(), n, lu + first, n,
                                                       ipiv + first * n, info + first, size));
  }
  MATRIXD_RETURN_IF_ERROR(getrf_timer.Stop());
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchBatchedLuPivotSummary(
      work.as<const Wide>(), count, n, ipiv, info, summaries.as<DeterminantSummary>(), stream));
  std::vector<DeterminantSummary> host(static_cast<size_t>(count));
  MATRIXD_RETURN_IF_ERROR(context.Download(summaries, host.data(), summary_bytes));
  BatchedDeterminants result;
  MATRIXD_RETURN_IF_ERROR(scale_timer->AppendTo(&result.stats, "scale_rows",
                                                a.byte_size() + elements * sizeof(Wide),
                                                2.0 * static_cast<double>(elements)));
  MATRIXD_RETURN_IF_ERROR(getrf_timer.AppendTo(&result.stats, "cublas_getrf_batched",
                                               2 * elements * sizeof(Wide), flops));
  result.stats.flops = flops;
  result.stats.bytes_moved = a.byte_size() + 3 * elements * sizeof(Wide) + summary_bytes;
  result.values.reserve(host.size());
  for (size_t b = 0; b < host.size(); ++b) {
    absl::StatusOr<ScaledNumber> value = DeterminantOfSummary(host[b], n);
    if (!value.ok()) {
      return absl::Status(value.status().code(),
                          absl::StrCat("matrix ", b, " of the batch: ", value.status().message()));
    }
    result.values.push_back(*value);
  }
  return result;
}

}  // namespace

absl::StatusOr<ScaledNumber> DeterminantOfSummary(const DeterminantSummary& summary, int n) {
  if (summary.info < 0) {
    return absl::InternalError(
        absl::StrCat("getrf rejected argument ", -summary.info, " (n = ", n, ")"));
  }
  if (summary.zero_rows > 0 || summary.zero_pivots > 0 || summary.info > 0) {
    return ScaledNumber::Zero();
  }
  if (summary.nonfinite_pivots > 0) {
    return absl::OutOfRangeError(
        "determinant: element growth during LU overflowed the double range");
  }
  ScaledNumber det = ScaledNumber::Of({summary.mantissa_real, summary.mantissa_imag});
  MultiplyByPowerOfTwo(det, summary.exponent2 + summary.row_exponent2);
  if (summary.odd_swaps != 0) det.Negate();
  return det;
}

absl::StatusOr<BatchedDeterminants> DeterminantBatch(const MatrixView& a, int64_t count,
                                                     DeviceContext& context, JobControl* control) {
  if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
  switch (a.dtype) {
    case DType::kFloat32:
      return BatchedLu<float, double>(a, count, context);
    case DType::kFloat64:
      return BatchedLu<double, double>(a, count, context);
    case DType::kComplex64:
      return BatchedLu<std::complex<float>, std::complex<double>>(a, count, context);
    case DType::kComplex128:
      return BatchedLu<std::complex<double>, std::complex<double>>(a, count, context);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("matrix.dtype is ", DTypeName(a.dtype), "; want a floating dtype"));
  }
}

}  // namespace matrixd::cuda
