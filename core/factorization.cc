#include "core/factorization.h"

#include <algorithm>
#include <complex>
#include <cstdint>
#include <span>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace matrixd {
namespace {

template <typename T>
int64_t FirstZeroDiagonal(const Matrix& m) {
  const std::span<const T> values = m.As<T>();
  const int64_t k = std::min(m.rows(), m.cols());
  for (int64_t j = 0; j < k; ++j) {
    if (values[static_cast<size_t>(j * m.cols() + j)] == T(0)) return j;
  }
  return -1;
}

int64_t FirstZeroDiagonal(const Matrix& m) {
  switch (m.dtype()) {
    case DType::kFloat32:
      return FirstZeroDiagonal<float>(m);
    case DType::kFloat64:
      return FirstZeroDiagonal<double>(m);
    case DType::kComplex64:
      return FirstZeroDiagonal<std::complex<float>>(m);
    case DType::kComplex128:
      return FirstZeroDiagonal<std::complex<double>>(m);
    default:
      return -1;
  }
}

std::string ShapeOf(const MatrixView& m) {
  return absl::StrCat(m.rows, "x", m.cols, " ", DTypeName(m.dtype));
}

absl::Status CheckPart(const MatrixView& part, const char* name, int64_t rows, int64_t cols,
                       DType dtype) {
  if (part.rows != rows || part.cols != cols || part.dtype != dtype) {
    return absl::InvalidArgumentError(absl::StrCat("the factorization's ", name, " is ",
                                                   ShapeOf(part), "; want ", rows, "x", cols, " ",
                                                   DTypeName(dtype)));
  }
  return absl::OkStatus();
}

// The factorization's own parts agree with each other.
absl::Status CheckParts(const FactorizationView& f) {
  const MatrixView& factor = f.factor;
  if (!IsFloating(factor.dtype) || factor.rows < 1 || factor.cols < 1) {
    return absl::InvalidArgumentError(absl::StrCat("the factorization's factor is ",
                                                   ShapeOf(factor),
                                                   "; want a floating matrix of 1 or more rows"));
  }
  const int64_t m = f.rows();
  const int64_t n = f.cols();
  switch (f.kind) {
    case FactorizationKind::kLu:
      MATRIXD_RETURN_IF_ERROR(CheckPart(factor, "LU factors", n, n, factor.dtype));
      MATRIXD_RETURN_IF_ERROR(CheckPart(f.permutation, "permutation", 1, n, DType::kInt64));
      break;
    case FactorizationKind::kCholesky:
      MATRIXD_RETURN_IF_ERROR(CheckPart(factor, "L", n, n, factor.dtype));
      break;
    case FactorizationKind::kQr:
      MATRIXD_RETURN_IF_ERROR(CheckPart(f.r, "R", std::min(m, n), n, factor.dtype));
      if (factor.cols != std::min(m, n)) {
        return absl::InvalidArgumentError(
            absl::StrCat("the factorization's Q is ", ShapeOf(factor), "; R is ", ShapeOf(f.r)));
      }
      break;
  }
  if (f.input.rows != 0) {
    MATRIXD_RETURN_IF_ERROR(CheckPart(f.input, "input", m, n, factor.dtype));
  }
  return absl::OkStatus();
}

}  // namespace

const char* FactorizationName(FactorizationKind kind) {
  switch (kind) {
    case FactorizationKind::kLu:
      return "LU";
    case FactorizationKind::kCholesky:
      return "Cholesky";
    case FactorizationKind::kQr:
      return "QR";
  }
  return "?";
}

FactorizationView FactorizationOf(const FactorizeResult& result, const MatrixView* input) {
  FactorizationView view;
  view.kind = result.kind;
  switch (result.kind) {
    case FactorizationKind::kLu:
      view.factor = result.lu.view();
      view.permutation = {.rows = 1,
                          .cols = static_cast<int64_t>(result.permutation.size()),
                          .dtype = DType::kInt64,
                          .data = reinterpret_cast<const std::byte*>(result.permutation.data())};
      view.singular_column = result.singular_column.value_or(-1);
      break;
    case FactorizationKind::kCholesky:
      view.factor = result.l.view();
      break;
    case FactorizationKind::kQr:
      view.factor = result.q.view();
      view.r = result.r.view();
      view.singular_column = FirstZeroDiagonal(result.r);
      break;
  }
  if (input != nullptr) view.input = *input;
  return view;
}

absl::Status CheckSolve(const FactorizationView& f, const MatrixView& rhs,
                        const SolveOptions& options, absl::string_view rhs_field) {
  if (f.kind != FactorizationKind::kQr && f.factor.rows != f.factor.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("the factorization is the ", FactorizationName(f.kind), " of a ",
                     f.factor.rows, "x", f.factor.cols, " matrix; a solve needs a square one"));
  }
  MATRIXD_RETURN_IF_ERROR(CheckParts(f));
  const char* name = FactorizationName(f.kind);
  if (options.transpose != SolveTranspose::kNone && f.kind != FactorizationKind::kLu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "transpose applies to LU factorizations only; this one is ", name,
        f.kind == FactorizationKind::kCholesky ? " (A is Hermitian: solve without it)" : ""));
  }
  if (options.residual && f.input.rows == 0) {
    return absl::InvalidArgumentError(
        "residual needs A: make the factorization with Factorize's keep_input");
  }
  if (f.kind == FactorizationKind::kQr && f.rows() < f.cols()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the factorization is the QR of a ", f.rows(), "x", f.cols(),
                     " matrix; a QR solve needs rows >= cols (least squares)"));
  }
  if (rhs.dtype != f.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(rhs_field, ".dtype is ", DTypeName(rhs.dtype),
                                                   "; want the factorization's ",
                                                   DTypeName(f.dtype())));
  }
  const int64_t rows = options.transpose == SolveTranspose::kNone ? f.rows() : f.cols();
  if (rhs.rows != rows || rhs.cols < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(rhs_field, " is ", rhs.rows, "x", rhs.cols, "; want ", rows, " rows (the ",
                     name, " of a ", f.rows(), "x", f.cols(), " matrix) and 1 or more columns"));
  }
  if (f.singular_column >= 0) {
    const int64_t j = f.singular_column;
    const char* factor = f.kind == FactorizationKind::kQr ? "R" : "U";
    return absl::FailedPreconditionError(
        absl::StrCat("the ", name, " factorization is singular: ", factor, "[", j, ",", j,
                     "] = 0 at column ", j, "; it cannot be solved with"));
  }
  return absl::OkStatus();
}

double SolveFlops(const FactorizationView& f, int64_t rhs_cols, bool residual) {
  const double m = static_cast<double>(f.rows());
  const double n = static_cast<double>(f.cols());
  const double k = static_cast<double>(rhs_cols);
  double flops = f.kind == FactorizationKind::kQr ? (2.0 * m * n + n * n) * k : 2.0 * n * n * k;
  if (residual) flops += 2.0 * m * n * k;
  return IsComplex(f.dtype()) ? 4.0 * flops : flops;
}

}  // namespace matrixd
