#include "core/cuda/modular_lu.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/elimination.h"
#include "core/modular_arithmetic.h"
#include "core/status_macros.h"

namespace matrixd::cuda {

// Blocked right-looking elimination with a first-non-zero pivot
// (core/cuda/blocked_elimination.cuh): the panel of the next k rows picks its k pivots and is
// eliminated first, then the trailing matrix takes all k updates in one GEMM-like pass. Below 2^26
// the residues are balanced float64
// (|r| <= p/2): products are exact below 2^50, and a sum is reduced only every
// floor((2^53 - p/2) / (p/2)^2) terms (millions for p ~ 2^16), so the update runs at the float64
// multiply-add rate. Above, uint64 residues whose 128-bit products are summed in 192 bits and
// reduced once per pass.
absl::StatusOr<DeterminantResult> ModularLuDeterminant(const MatrixView& a, uint64_t p,
                                                       DeviceContext& context,
                                                       JobControl* control) {
  MATRIXD_RETURN_IF_ERROR(ValidateModularDeterminantInput(a, p));
  if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
  constexpr uint64_t kFloat64Limit = uint64_t{1} << 26;
  DeterminantResult result;
  result.method_used = DeterminantMethod::kLu;
  EliminationWork work;
  MATRIXD_ASSIGN_OR_RETURN(
      uint64_t residue,
      ModularDeterminantOnDevice(
          context, a.As<int64_t>().data(), a.rows, p,
          p < kFloat64Limit ? ResidueArithmetic::kBalancedFloat64 : ResidueArithmetic::kUint64,
          Schedule::kBlocked, control, &work));
  result.stats.flops += work.flops;
  result.stats.bytes_moved += work.bytes_moved;
  result.residue = residue;
  ReportProgress(control, 1.0);
  return result;
}

absl::Status ValidateModularDeterminantInput(const MatrixView& a, uint64_t p) {
  if (a.dtype != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix.dtype is ", DTypeName(a.dtype), "; want int64 when modulus > 0"));
  }
  if (a.rows != a.cols || a.rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix has shape ", a.rows, "x", a.cols, "; want square and non-empty"));
  }
  if (p < 2 || p >= kModulusLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("modulus ", p, " must be 0 or a prime below 2^62"));
  }
  return absl::OkStatus();
}

}  // namespace matrixd::cuda
