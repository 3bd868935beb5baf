#include "core/cuda/condensation.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"
#include "core/cuda/elimination.h"
#include "core/cuda/modular_lu.h"
#include "core/scaled_number.h"

namespace matrixd::cuda {
namespace {

bool IsFinite(std::complex<double> z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); }

// x * 2^exponent2, in steps that keep every factor a normal double.
void MultiplyByPowerOfTwo(ScaledNumber& x, int64_t exponent2) {
  while (exponent2 != 0) {
    const int64_t step = std::clamp<int64_t>(exponent2, -1000, 1000);
    x *= std::ldexp(1.0, static_cast<int>(step));
    exponent2 -= step;
  }
}

void AddWork(const EliminationWork& work, ComputeStats* stats) {
  stats->flops += work.flops;
  stats->bytes_moved += work.bytes_moved;
}

// Source: the input's element type; Wide: double or std::complex<double>, what LaunchScaleRows
// writes and the condensation computes in.
template <typename Source, typename Wide>
absl::StatusOr<DeterminantResult> CondenseFloating(const MatrixView& a, Schedule schedule,
                                                   DeviceContext& context, JobControl* control) {
  const int64_t n = a.rows;
  const cudaStream_t stream = context.stream();
  DeterminantResult result;
  result.method_used = DeterminantMethod::kCondensation;

  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer summary_buffer,
                           context.Allocate(sizeof(DeterminantSummary)));
  auto* summary = summary_buffer.as<DeterminantSummary>();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(summary, 0, sizeof(DeterminantSummary), stream));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer work,
                           context.Allocate(static_cast<size_t>(a.size()) * sizeof(Wide)));
  {
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer source, context.Allocate(a.byte_size()));
    MATRIXD_RETURN_IF_ERROR(context.Upload(a.data, source, a.byte_size()));
    // Rows scaled by powers of two, exactly, as on the CPU: keeps the closest-to-1 pivot rule
    // meaningful and the products of entries of rows 1e300 apart inside the double range.
    MATRIXD_CUDA_RETURN_IF_ERROR(
        LaunchScaleRows(source.as<const Source>(), work.as<Wide>(), n, n, summary, stream));
    // `source` returns to the pool here, stream-ordered after the scaling kernel.
  }
  EliminationWork done;
  done.bytes_moved = 2 * a.byte_size() + static_cast<uint64_t>(a.size()) * sizeof(Wide);
  MATRIXD_ASSIGN_OR_RETURN(
      CondensationPivots pivots,
      CondensePivots(context, work, n, IsComplex(a.dtype), schedule, control, &done));
  AddWork(done, &result.stats);
  DeterminantSummary host{};
  MATRIXD_RETURN_IF_ERROR(context.Download(summary_buffer, &host, sizeof(host)));
  if (pivots.singular || host.zero_rows > 0) {
    result.value = ScaledNumber::Zero();
    return result;
  }
  // The seed paper multiplies its pivots in an order (its Algorithm 1) that avoids overflow when
  // the result fits a double; a ScaledNumber cannot overflow in any order.
  ScaledNumber det;
  for (const std::complex<double> p : pivots.values) {
    if (!IsFinite(p)) {
      return absl::OutOfRangeError(
          "determinant: element growth during condensation overflowed the double range; use "
          "method LU");
    }
    det *= p;
  }
  MultiplyByPowerOfTwo(det, host.row_exponent2);
  result.value = det;
  return result;
}

absl::StatusOr<DeterminantResult> Condense(const MatrixView& a, Schedule schedule,
                                           DeviceContext& context, JobControl* control) {
  if (a.rows != a.cols || a.rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix has shape ", a.rows, "x", a.cols, "; want square and non-empty"));
  }
  if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
  absl::StatusOr<DeterminantResult> result;
  switch (a.dtype) {
    case DType::kFloat32:
      result = CondenseFloating<float, double>(a, schedule, context, control);
      break;
    case DType::kFloat64:
      result = CondenseFloating<double, double>(a, schedule, context, control);
      break;
    case DType::kInt64:
      result = CondenseFloating<int64_t, double>(a, schedule, context, control);
      break;
    case DType::kComplex64:
      result = CondenseFloating<std::complex<float>, std::complex<double>>(a, schedule, context,
                                                                           control);
      break;
    case DType::kComplex128:
      result = CondenseFloating<std::complex<double>, std::complex<double>>(a, schedule, context,
                                                                            control);
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "matrix.dtype is ", DTypeName(a.dtype),
          "; want float32, float64, complex64, complex128 or int64 for a determinant"));
  }
  if (result.ok()) ReportProgress(control, 1.0);
  return result;
}

absl::StatusOr<DeterminantResult> CondenseModular(const MatrixView& a, uint64_t p,
                                                  Schedule schedule, DeviceContext& context,
                                                  JobControl* control) {
  MATRIXD_RETURN_IF_ERROR(ValidateModularDeterminantInput(a, p));
  if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
  DeterminantResult result;
  result.method_used = DeterminantMethod::kCondensation;
  EliminationWork work;
  // The paper's integer arithmetic for every p: canonical residues, modular products.
  MATRIXD_ASSIGN_OR_RETURN(
      uint64_t residue,
      ModularDeterminantOnDevice(context, a.As<int64_t>().data(), a.rows, p,
                                 ResidueArithmetic::kUint64, schedule, control, &work));
  AddWork(work, &result.stats);
  result.residue = residue;
  ReportProgress(control, 1.0);
  return result;
}

}  // namespace

absl::StatusOr<DeterminantResult> CondensationDeterminant(const MatrixView& a,
                                                          DeviceContext& context,
                                                          JobControl* control) {
  return Condense(a, Schedule::kBlocked, context, control);
}

absl::StatusOr<DeterminantResult> CondensationDeterminantUnfused(const MatrixView& a,
                                                                 DeviceContext& context,
                                                                 JobControl* control) {
  return Condense(a, Schedule::kStepwise, context, control);
}

absl::StatusOr<DeterminantResult> ModularCondensationDeterminant(const MatrixView& a, uint64_t p,
                                                                 DeviceContext& context,
                                                                 JobControl* control) {
  return CondenseModular(a, p, Schedule::kBlocked, context, control);
}

absl::StatusOr<DeterminantResult> ModularCondensationDeterminantUnfused(const MatrixView& a,
                                                                        uint64_t p,
                                                                        DeviceContext& context,
                                                                        JobControl* control) {
  return CondenseModular(a, p, Schedule::kStepwise, context, control);
}

}  // namespace matrixd::cuda
