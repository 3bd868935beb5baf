#include "core/refinement.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/factorization.h"

namespace matrixd {

absl::Status CheckRefineOptions(const FactorizeOptions& options, bool has_rhs) {
  if (!options.refine.enabled) {
    if (options.refine.factor_precision != RefinePrecision::kInput) {
      return absl::InvalidArgumentError("refine_factor_precision is set without refine");
    }
    if (options.refine.max_iterations != 0) {
      return absl::InvalidArgumentError("refine_max_iterations is set without refine");
    }
    return absl::OkStatus();
  }
  if (options.kind != FactorizationKind::kLu) {
    return absl::InvalidArgumentError(absl::StrCat("refine is set with kind ",
                                                   FactorizationName(options.kind),
                                                   "; refinement is for LU only"));
  }
  if (!has_rhs) {
    return absl::InvalidArgumentError("refine is set without rhs; refinement refines a solve");
  }
  if (options.batch_count > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refine is set with batch_count = ", options.batch_count, "; refine one matrix at a time"));
  }
  if (options.refine.max_iterations < 0) {
    return absl::InvalidArgumentError(absl::StrCat("refine_max_iterations is ",
                                                   options.refine.max_iterations,
                                                   "; want 0 (the default) or more"));
  }
  return absl::OkStatus();
}

double UnitRoundoff(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kComplex64 ? 0x1p-24 : 0x1p-53;
}

bool IsMixedPrecision(RefinePrecision precision, DType input) {
  switch (precision) {
    case RefinePrecision::kInput:
      return false;
    case RefinePrecision::kFloat32:
      return input == DType::kFloat64 || input == DType::kComplex128;
    case RefinePrecision::kTf32:
    case RefinePrecision::kFloat16:
      return true;
  }
  return false;
}

double RefineThreshold(DType input, int64_t n, RefinePrecision precision) {
  const double u = UnitRoundoff(input);
  if (!IsMixedPrecision(precision, input)) return 4.0 * u;
  return std::max(4.0, std::sqrt(static_cast<double>(n))) * u;
}

int RefineIterations(int requested) { return requested > 0 ? requested : kDefaultRefineIterations; }

bool RefineStoppingRule::Done(double backward_error, double x_norm) const {
  if (steps_ >= max_steps_ || !std::isfinite(backward_error)) return true;
  if (steps_ == 0) return false;  // the first correction's size is not known yet
  if (backward_error <= threshold_ && last_correction_ <= unit_roundoff_ * x_norm) return true;
  return steps_ >= 2 && !(last_correction_ <= 0.5 * previous_correction_);
}

void RefineStoppingRule::Stepped(double correction_norm) {
  previous_correction_ = last_correction_;
  last_correction_ = correction_norm;
  ++steps_;
}

std::string RefinePrecisionName(RefinePrecision precision, DType input) {
  const bool complex = IsComplex(input);
  switch (precision) {
    case RefinePrecision::kInput:
      return std::string(DTypeName(input));
    case RefinePrecision::kFloat32:
      return complex ? "complex64" : "float32";
    case RefinePrecision::kTf32:
      return complex ? "complex tf32" : "tf32";
    case RefinePrecision::kFloat16:
      return complex ? "complex float16" : "float16";
  }
  return "unknown";
}

double BackwardError(double residual_norm, double a_norm, double x_norm, double b_norm) {
  if (!std::isfinite(residual_norm) || !std::isfinite(a_norm) || !std::isfinite(x_norm) ||
      !std::isfinite(b_norm)) {
    return std::numeric_limits<double>::infinity();
  }
  const double scale = a_norm * x_norm + b_norm;
  if (scale == 0.0) return residual_norm == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return residual_norm / scale;
}

}  // namespace matrixd
