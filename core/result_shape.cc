#include "core/result_shape.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace matrixd {
namespace {

absl::Status CheckShape(const char* what, const Matrix& got, bool written_in_place, int64_t rows,
                        int64_t cols, DType dtype) {
  if (got.empty() && written_in_place) return absl::OkStatus();
  if (got.rows() == rows && got.cols() == cols && got.dtype() == dtype) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("the backend returned ", what, " as a ", got.rows(), "x",
                                          got.cols(), " ", DTypeName(got.dtype()), " matrix; want ",
                                          rows, "x", cols, " ", DTypeName(dtype),
                                          " (a backend fault: the result is withheld)"));
}

}  // namespace

absl::Status CheckMultiplyResultShape(const MatrixView& a, const MatrixView& b,
                                      const MultiplyOptions& options,
                                      const MultiplyResult& result) {
  return CheckShape("multiply result c", result.c, options.output != nullptr,
                    options.transpose_a ? a.cols : a.rows, options.transpose_b ? b.rows : b.cols,
                    a.dtype);
}

absl::Status CheckSolveResultShape(const FactorizationView& factorization, const MatrixView& rhs,
                                   const SolveOptions& options, const SolveResult& result) {
  return CheckShape("solve result x", result.x, options.output != nullptr,
                    factorization.members() * factorization.cols(), rhs.cols, rhs.dtype);
}

}  // namespace matrixd
