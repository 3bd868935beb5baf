// Checks that a backend's matrix result has the shape and dtype its call promises, so that a
// broken backend fails the job instead of answering a wrong-shaped matrix (or writing a short one
// into a kept result). Cheap: reads only shapes.
#ifndef MATRIXD_CORE_RESULT_SHAPE_H_
#define MATRIXD_CORE_RESULT_SHAPE_H_

#include "absl/status/status.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd {

// OK when result.c is op(A) op(B)'s rows x cols of a's dtype, or empty with options.output set
// (written in place). INTERNAL naming "multiply result c", what came and what was due, otherwise.
absl::Status CheckMultiplyResultShape(const MatrixView& a, const MatrixView& b,
                                      const MultiplyOptions& options, const MultiplyResult& result);

// OK when result.x is (members x cols of the factorization) x rhs.cols of rhs's dtype, or empty
// with options.output set. INTERNAL naming "solve result x" otherwise.
absl::Status CheckSolveResultShape(const FactorizationView& factorization, const MatrixView& rhs,
                                   const SolveOptions& options, const SolveResult& result);

}  // namespace matrixd

#endif  // MATRIXD_CORE_RESULT_SHAPE_H_
