#include "core/cuda/determinant.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/accuracy.h"
#include "core/cpu/lu_determinant.h"
#include "core/cuda/condensation.h"
#include "core/cuda/condition.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"
#include "core/cuda/determinant_batch.h"
#include "core/cuda/exact_determinant.h"
#include "core/cuda/exact_primes.h"
#include "core/cuda/factor_solves.h"
#include "core/cuda/kernel_timer.h"
#include "core/cuda/library_types.h"
#include "core/cuda/modular_lu.h"
#include "core/modular_arithmetic.h"

namespace matrixd::cuda {
namespace {

// A decimal integer ("-123...") as a ScaledNumber. Up to 19 digits it is exactly the double
// nearest to the integer (as static_cast<double> of an int64 would give); longer ones multiply
// the leading 19 digits by exact powers 10^22, one rounding each: relative error below
// 1e-16 * (digits / 22 + 1).
ScaledNumber DecimalToScaled(const std::string& decimal) {
  const bool negative = !decimal.empty() && decimal[0] == '-';
  const std::string_view digits = std::string_view(decimal).substr(negative ? 1 : 0);
  constexpr size_t kLeading = 19;  // 10^19 - 1 < 2^64
  uint64_t leading = 0;
  for (size_t i = 0; i < std::min(kLeading, digits.size()); ++i) {
    leading = leading * 10 + static_cast<uint64_t>(digits[i] - '0');
  }
  ScaledNumber x = ScaledNumber::Of(static_cast<double>(leading));
  for (size_t rest = digits.size() > kLeading ? digits.size() - kLeading : 0; rest > 0;) {
    const size_t step = std::min<size_t>(rest, 22);
    double power = 1.0;  // 10^step: every partial product up to 10^22 is exact in double
    for (size_t i = 0; i < step; ++i) power *= 10.0;
    x *= power;
    rest -= step;
  }
  if (negative) x.Negate();
  return x;
}

// Prefixes a failure with the operation, keeping its code.
absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

// Source element type -> the type the factorisation runs in (double or complex<double>: float32
// and complex64 inputs are computed in double precision, as on the CPU).
// Up to this order the LU determinant's condition estimate runs on the host (the CPU backend's
// block estimator on the downloaded factors, core/cpu/condition.h); above, on the device
// (core/cuda/condition.h).
constexpr int kHostConditionMaxOrder = 256;

template <typename Source>
using WideOf = std::conditional_t<std::is_same_v<Source, std::complex<float>> ||
                                      std::is_same_v<Source, std::complex<double>>,
                                  std::complex<double>, double>;

// det(A) and the reciprocal infinity-norm condition estimate of the row-scaled D A (0 when a
// pivot is exactly zero), as the CPU backend's LuDeterminant.
struct LuValue {
  ScaledNumber det;
  double rcond = 0.0;
};

// det(A) by getrf. The row-major n x n array read column-major is A^T, and det(A^T) = det(A), so
// no transpose is needed. Rows are scaled by powers of two first (exact; see LaunchScaleRows),
// and the pivots are multiplied on the device: only a DeterminantSummary comes back. The
// condition estimate is that of the factorized (D A)^T in the 1-norm, i.e. D A's in the
// infinity-norm (docs/accuracy.md): ||(D A)^T||_1 from column sums before getrf overwrites the
// copy, then Hager-Higham on the factors (core/cuda/factor_solves.h).
template <typename Source>
absl::StatusOr<LuValue> LuDeterminantOf(const MatrixView& a, DeviceContext& context,
                                        ComputeStats* stats) {
  using Wide = WideOf<Source>;
  using Traits = LibraryTraits<Wide>;
  const int n = static_cast<int>(a.rows);
  const size_t elements = static_cast<size_t>(a.size());
  const cudaStream_t stream = context.stream();

  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer summary_buffer,
                           context.Allocate(sizeof(DeterminantSummary)));
  auto* summary = summary_buffer.as<DeterminantSummary>();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(summary, 0, sizeof(DeterminantSummary), stream));

  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer work, context.Allocate(elements * sizeof(Wide)));
  // ||work||_1, work read column-major (the matrix getrf factors): its columns are the scaled
  // rows, summed by the scaling's own pass.
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer column_sums,
                           context.Allocate(static_cast<size_t>(std::max(n, 1)) * sizeof(double)));
  std::optional<KernelTimer> scale_timer;  // started after the upload, inside the block
  {
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer source, context.Allocate(a.byte_size()));
    MATRIXD_RETURN_IF_ERROR(context.Upload(a.data, source, a.byte_size()));
    MATRIXD_ASSIGN_OR_RETURN(KernelTimer started, KernelTimer::Start(stream));
    scale_timer.emplace(std::move(started));
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchScaleRows(source.as<const Source>(), work.as<Wide>(), a.rows,
                                                 a.cols, summary, stream,
                                                 column_sums.as<double>()));
    MATRIXD_RETURN_IF_ERROR(scale_timer->Stop());
    // `source` goes back to the pool here, stream-ordered after the scaling kernel.
  }
  DeviceOneNorm one_norm = DeviceOneNorm::FromSums(std::move(column_sums), n);

  int workspace_elements = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(Traits::getrf_buffer_size(
      context.cusolver(), n, n, LibraryPointer<Wide>(work.data()), n, &workspace_elements));
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceBuffer workspace,
      context.Allocate(static_cast<size_t>(std::max(workspace_elements, 1)) * sizeof(Wide)));
  // ipiv[0, n) then info.
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer pivots,
                           context.Allocate((static_cast<size_t>(n) + 1) * sizeof(int)));
  int* ipiv = pivots.as<int>();
  int* info = ipiv + n;
  MATRIXD_ASSIGN_OR_RETURN(KernelTimer getrf_timer, KernelTimer::Start(stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(Traits::getrf(context.cusolver(), n, n,
                                             LibraryPointer<Wide>(work.data()), n,
                                             LibraryPointer<Wide>(workspace.data()), ipiv, info));
  MATRIXD_RETURN_IF_ERROR(getrf_timer.Stop());
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchLuPivotSummary(work.as<const Wide>(), n, n, ipiv, info, summary, stream));

  DeterminantSummary host{};
  MATRIXD_RETURN_IF_ERROR(context.Download(summary_buffer, &host, sizeof(host)));

  const double nd = static_cast<double>(n);
  const double flops_per_update = std::is_same_v<Wide, double> ? 2.0 : 8.0;
  stats->flops += flops_per_update * nd * nd * nd / 3.0;
  // The upload, the scaled copy written and read back by getrf's panels, and getrf's result.
  stats->bytes_moved += a.byte_size() + 3 * elements * sizeof(Wide);
  // Scaling reads the input and writes the widened copy, summing its rows' magnitudes for
  // ||A||_1 on the way (memory-bound: the one to compare with the copy bandwidth); getrf reads
  // and writes the copy at least once.
  MATRIXD_RETURN_IF_ERROR(scale_timer->AppendTo(stats, "scale_rows",
                                                a.byte_size() + elements * sizeof(Wide),
                                                2.0 * static_cast<double>(elements)));
  MATRIXD_RETURN_IF_ERROR(getrf_timer.AppendTo(stats, "cusolver_getrf", 2 * elements * sizeof(Wide),
                                               flops_per_update * nd * nd * nd / 3.0));

  MATRIXD_ASSIGN_OR_RETURN(const ScaledNumber det, DeterminantOfSummary(host, n));
  // A zero determinant (a zero row or pivot) needs no condition estimate: rcond is 0.
  if (det.is_zero()) return LuValue{.det = det, .rcond = 0.0};
  LuValue value{.det = det};

  MATRIXD_ASSIGN_OR_RETURN(const double norm, one_norm.Value(context, stats));
  if (n <= kHostConditionMaxOrder) {
    // One copy of the factors and the host estimator beat the device estimator's 4 to 11 block
    // solves with a synchronisation each (a lone n = 8 determinant: ~0.6 ms of them on the H100,
    // measured with the earlier one-vector estimator).
    const auto start = std::chrono::steady_clock::now();
    std::vector<Wide> factors(elements);
    MATRIXD_RETURN_IF_ERROR(context.Download(work, factors.data(), elements * sizeof(Wide)));
    value.rcond = cpu::LuReciprocalCondition(n, factors.data(), norm);
    stats->kernels.push_back(KernelRecord{
        "condition_estimate",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
        elements * sizeof(Wide), flops_per_update * 5.0 * nd * nd});
    return value;
  }
  // The pivots come back once (the stream is idle after the summary's download); the solves
  // apply them as getrs would.
  std::vector<int> host_pivots(static_cast<size_t>(n));
  MATRIXD_RETURN_IF_ERROR(
      context.Download(pivots, host_pivots.data(), host_pivots.size() * sizeof(int)));
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceFactorSolves<Wide> solves,
      DeviceFactorSolves<Wide>::Lu(context, work.as<const Wide>(), n, n, host_pivots));
  auto solve = [&](bool adjoint, void* x, int columns) {
    return solves.Apply(adjoint, x, columns);
  };
  MATRIXD_ASSIGN_OR_RETURN(value.rcond, DeviceReciprocalCondition<Wide>(
                                            context, n, norm, DeviceInverseApply(solve), stats));
  return value;
}

absl::StatusOr<LuValue> LuDeterminant(const MatrixView& a, DeviceContext& context,
                                      ComputeStats* stats) {
  switch (a.dtype) {
    case DType::kFloat32:
      return LuDeterminantOf<float>(a, context, stats);
    case DType::kFloat64:
      return LuDeterminantOf<double>(a, context, stats);
    case DType::kInt64:
      return LuDeterminantOf<int64_t>(a, context, stats);
    case DType::kComplex64:
      return LuDeterminantOf<std::complex<float>>(a, context, stats);
    case DType::kComplex128:
      return LuDeterminantOf<std::complex<double>>(a, context, stats);
    default:
      return absl::InvalidArgumentError(absl::StrCat("matrix.dtype is ",
                                                     std::string(DTypeName(a.dtype)),
                                                     "; want float32, float64, complex64, "
                                                     "complex128 or int64 for a determinant"));
  }
}

void AddWork(const ComputeStats& from, ComputeStats* to) {
  to->flops += from.flops;
  to->bytes_moved += from.bytes_moved;
}

absl::StatusOr<DeterminantResult> ModularDeterminant(const MatrixView& a,
                                                     const DeterminantOptions& options,
                                                     DeviceContext& context, JobControl* control) {
  if (a.dtype != DType::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix.dtype is ", std::string(DTypeName(a.dtype)), "; want int64 when modulus > 0"));
  }
  if (options.modulus < 2 || options.modulus >= kModulusLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("modulus ", options.modulus, " must be 0 or a prime below 2^62"));
  }
  const bool condensation = options.method == DeterminantMethod::kCondensation;
  absl::StatusOr<DeterminantResult> result =
      condensation ? ModularCondensationDeterminant(a, options.modulus, context, control)
                   : ModularLuDeterminant(a, options.modulus, context, control);
  if (result.ok()) {
    result->certificate =
        ResidueCertificate(condensation ? "condensation mod p on the GPU" : "LU mod p on the GPU",
                           options.modulus, result->residue);
    ReportProgress(control, 1.0);
  }
  return result;
}

}  // namespace

absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                              const DeterminantOptions& options,
                                              DeviceContext& context, JobControl* control) {
  if (a.rows != a.cols || a.rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix has shape ", a.rows, "x", a.cols, "; want square and non-empty"));
  }
  if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
  if (options.modulus > 0) return ModularDeterminant(a, options, context, control);
  if (!IsFloating(a.dtype) && a.dtype != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix.dtype is ", std::string(DTypeName(a.dtype)),
                     "; want float32, float64, complex64, complex128 or int64 for a determinant"));
  }
  const int64_t n = a.rows;

  // For INT64 the exact determinant follows when affordable (the GPU's own budget,
  // kCudaExactDeterminantBudget).
  ExactPlan plan;
  if (a.dtype == DType::kInt64) plan = PlanExactDeterminant(a, options);
  const bool exact_affordable = plan.primes > 0 && plan.affordable;
  // Progress: the floating-point value (weighed as 16 primes of a batch), then the primes.
  const double value_share = exact_affordable ? 16.0 / (16.0 + plan.primes) : 1.0;

  // Its primes are drawn on the host while the device computes the floating-point value.
  std::optional<ExactPrimes> primes;
  if (exact_affordable) primes.emplace(plan.primes);

  // An INT64 matrix that goes on to its exact value is uploaded once for both: the floating-point
  // phase copies it on the device, the exact one reads it in place.
  std::optional<DeviceBuffer> uploaded;
  MatrixView entries = a;
  if (exact_affordable && !a.on_device()) {
    MATRIXD_ASSIGN_OR_RETURN(uploaded, context.Allocate(a.byte_size()));
    MATRIXD_RETURN_IF_ERROR(context.Upload(a.data, *uploaded, a.byte_size()));
    entries.data = uploaded->as<const std::byte>();
    entries.space = MemorySpace::kDevice;
    entries.device = context.device();
  }

  DeterminantResult result;
  if (options.method == DeterminantMethod::kCondensation) {
    result.method_used = DeterminantMethod::kCondensation;
    MATRIXD_ASSIGN_OR_RETURN(
        DeterminantResult condensed,
        CondensationDeterminant(entries, context, exact_affordable ? nullptr : control));
    result.value = condensed.value;
    AddWork(condensed.stats, &result.stats);
  } else {
    result.method_used = DeterminantMethod::kLu;
    absl::StatusOr<LuValue> value = LuDeterminant(entries, context, &result.stats);
    if (!value.ok()) {
      return Annotate(value.status(), absl::StrCat("LU determinant of a ", n, "x", n, " ",
                                                   std::string(DTypeName(a.dtype)), " matrix"));
    }
    result.value = value->det;
    result.accuracy = DeterminantAccuracy(value->rcond, n);
    // Where a well-conditioned determinant lies tells the exact one where to check first.
    if (exact_affordable) UseFloatingPointEstimate(result.value, *result.accuracy, &plan);
  }
  ReportProgress(control, value_share);

  if (a.dtype == DType::kInt64) {
    if (plan.primes == 0) {
      result.exact = std::string(1, '0');  // a zero row (assigning "0" trips GCC 12's -Wrestrict)
      result.value = ScaledNumber::Zero();
      result.certificate = ZeroRowCertificate();
    } else if (exact_affordable) {
      absl::StatusOr<ExactValue> exact =
          ExactDeterminant(entries, plan, *primes, context, control, value_share, &result.stats);
      if (!exact.ok()) {
        return Annotate(exact.status(),
                        absl::StrCat("exact determinant of a ", n, "x", n, " int64 matrix"));
      }
      result.exact = std::move(exact->decimal);
      result.certificate = std::move(exact->certificate);
      // The exact integer, rounded, is never worse than the floating-point value, and zero
      // exactly when A is singular.
      result.value = DecimalToScaled(result.exact);
      if (result.accuracy.has_value()) {
        result.accuracy = ExactlyRoundedAccuracy(result.accuracy->rcond);
      }
    }
  }
  ReportProgress(control, 1.0);
  return result;
}

}  // namespace matrixd::cuda
