// Iterative refinement's yardsticks, shared by the backends (docs/accuracy.md, "Iterative
// refinement"): when X counts as converged, when the loop stops, and what the precisions are
// called. The loops themselves live in core/cpu/refine.h and core/cuda/refine.h.
#ifndef MATRIXD_CORE_REFINEMENT_H_
#define MATRIXD_CORE_REFINEMENT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd {

// INVALID_ARGUMENT naming the field unless options.refine asks for something this release does:
// nothing (refine off), or an LU solve of one matrix (kind LU, a right-hand side, no batch).
absl::Status CheckRefineOptions(const FactorizeOptions& options, bool has_rhs);

// Correction steps of a same-precision refinement when the request names none.
inline constexpr int kDefaultRefineIterations = 10;

// The unit roundoff of a floating dtype's components: 2^-24 (float32, complex64) or 2^-53.
double UnitRoundoff(DType dtype);

// True when `precision` factorizes in less than `input`'s precision (the mixed-precision path:
// LAPACK ?sgesv / cuSOLVER IRS); false for kInput and for kFloat32 of float32/complex64 input.
bool IsMixedPrecision(RefinePrecision precision, DType input);

// The backward error at or below which X counts as converged, for an n x n system of `input`'s
// dtype: 4u when the residual is computed in more than the input's precision (same-precision
// refinement, where X rounded to working precision alone gives about u), max(4, sqrt(n)) u on
// the mixed path, whose library computes the residual in the input's precision (LAPACK dsgesv's
// own criterion).
double RefineThreshold(DType input, int64_t n, RefinePrecision precision);

// The largest number of correction steps: `requested` when > 0, else kDefaultRefineIterations.
int RefineIterations(int requested);

// The stopping rule of same-precision refinement, shared by the backends' loops. With residuals
// in extra precision each step also shrinks the forward error (to about u + cond(A) u^2 instead
// of cond(A) u), so the loop does not stop at the first X whose backward error is small: it
// stops once the backward error is <= threshold AND the last correction moved X by at most
// u ||X||_inf; or after max_steps; or when a correction is not at most half the one before
// (stagnation: rounding dominates, or cond(A) u is too close to 1 for refinement to contract).
class RefineStoppingRule {
 public:
  RefineStoppingRule(double threshold, double unit_roundoff, int max_steps)
      : threshold_(threshold), unit_roundoff_(unit_roundoff), max_steps_(max_steps) {}
  // After the residual of the current X: true when no further correction should be taken.
  bool Done(double backward_error, double x_norm) const;
  // A correction of this ||D||_inf is being added to X.
  void Stepped(double correction_norm);
  int steps() const { return steps_; }

 private:
  double threshold_;
  double unit_roundoff_;
  int max_steps_;
  int steps_ = 0;
  double last_correction_ = 0.0;      // meaningful once steps_ > 0
  double previous_correction_ = 0.0;  // meaningful once steps_ > 1
};

// What a factorization in `precision` of `input`'s dtype is called in Refinement: the dtype's
// name for kInput, else "float32", "tf32" or "float16" (complex: "complex64", "complex tf32",
// "complex float16").
std::string RefinePrecisionName(RefinePrecision precision, DType input);

// ||R||_inf / (||A||_inf ||X||_inf + ||B||_inf) from the three norms; 0 when all are 0, +inf when
// any is not finite.
double BackwardError(double residual_norm, double a_norm, double x_norm, double b_norm);

}  // namespace matrixd

#endif  // MATRIXD_CORE_REFINEMENT_H_
