#include "core/cpu/solve.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/lapack_types.h"
#include "core/factorization.h"
#include "core/status_macros.h"

namespace matrixd::cpu {
namespace {

// B := op(A)^-1 B, row-major, A n x n triangular.
template <typename T>
void Trsm(CBLAS_UPLO uplo, CBLAS_TRANSPOSE op, CBLAS_DIAG diag, blasint n, blasint nrhs, const T* a,
          T* b) {
  const T one = 1;
  Lapack<T>::trsm(CblasRowMajor, CblasLeft, uplo, op, diag, n, nrhs, BlasScalar(one), a, n, b,
                  nrhs);
}

CBLAS_TRANSPOSE OpOf(SolveTranspose transpose) {
  switch (transpose) {
    case SolveTranspose::kTranspose:
      return CblasTrans;
    case SolveTranspose::kConjugateTranspose:
      return CblasConjTrans;
    case SolveTranspose::kNone:
      break;
  }
  return CblasNoTrans;
}

// Row i of `dst` is row rows[i] of `src` (gather), or row rows[i] of `dst` is row i of `src`
// (scatter); rows of `cols` elements.
template <typename T>
void PermuteRows(const T* src, T* dst, std::span<const int64_t> rows, int64_t cols, bool scatter) {
  const size_t row_bytes = static_cast<size_t>(cols) * sizeof(T);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t from = scatter ? static_cast<int64_t>(i) : rows[i];
    const int64_t to = scatter ? rows[i] : static_cast<int64_t>(i);
    std::memcpy(dst + to * cols, src + from * cols, row_bytes);
  }
}

template <typename T>
long double FrobeniusNorm(const MatrixView& m) {
  const std::span<const T> values = m.As<T>();
  long double sum = 0;
  for (const T& v : values) {
    if constexpr (kIsComplex<T>) {
      sum += static_cast<long double>(v.real()) * v.real() +
             static_cast<long double>(v.imag()) * v.imag();
    } else {
      sum += static_cast<long double>(v) * v;
    }
  }
  return std::sqrt(sum);
}

// A = P^T L U with (P A)[i, :] = A[perm[i], :]. A X = B: L U X = P B. A^T X = B (A^H alike):
// U^T L^T (P X) = B, so the triangular solves run first and the rows are scattered after.
template <typename T>
void LuSolve(const FactorizationView& f, const MatrixView& rhs, SolveTranspose transpose, T* x) {
  const blasint n = static_cast<blasint>(f.cols());
  const blasint nrhs = static_cast<blasint>(rhs.cols);
  const T* lu = f.factor.As<T>().data();
  const std::span<const int64_t> perm = f.permutation.As<int64_t>();
  if (transpose == SolveTranspose::kNone) {
    PermuteRows(rhs.As<T>().data(), x, perm, nrhs, /*scatter=*/false);
    Trsm<T>(CblasLower, CblasNoTrans, CblasUnit, n, nrhs, lu, x);
    Trsm<T>(CblasUpper, CblasNoTrans, CblasNonUnit, n, nrhs, lu, x);
    return;
  }
  const CBLAS_TRANSPOSE op = OpOf(transpose);
  Matrix z = Matrix::CopyOf(rhs);
  Trsm<T>(CblasUpper, op, CblasNonUnit, n, nrhs, lu, z.As<T>().data());
  Trsm<T>(CblasLower, op, CblasUnit, n, nrhs, lu, z.As<T>().data());
  PermuteRows(z.As<T>().data(), x, perm, nrhs, /*scatter=*/true);
}

template <typename T>
absl::StatusOr<SolveResult> SolveTyped(const FactorizationView& f, const MatrixView& rhs,
                                       const SolveOptions& options) {
  const blasint m = static_cast<blasint>(f.rows());
  const blasint n = static_cast<blasint>(f.cols());
  const blasint nrhs = static_cast<blasint>(rhs.cols);
  SolveResult result;
  result.x = Matrix(n, nrhs, rhs.dtype);
  T* x = result.x.As<T>().data();
  const T* factor = f.factor.As<T>().data();
  switch (f.kind) {
    case FactorizationKind::kLu:
      LuSolve<T>(f, rhs, options.transpose, x);
      break;
    case FactorizationKind::kCholesky:
      // A = L L^H: L Y = B, then L^H X = Y.
      std::memcpy(x, rhs.data, rhs.byte_size());
      Trsm<T>(CblasLower, CblasNoTrans, CblasNonUnit, n, nrhs, factor, x);
      Trsm<T>(CblasLower, CblasConjTrans, CblasNonUnit, n, nrhs, factor, x);
      break;
    case FactorizationKind::kQr: {
      // Least squares (m >= n, k = n): X = R^-1 Q^H B, as Factorize solves it.
      Gemm<T>(CblasConjTrans, CblasNoTrans, n, nrhs, m, T(1), factor, n, rhs.As<T>().data(), nrhs,
              T(0), x, nrhs);
      SolveUpperTriangular<T>(n, nrhs, f.r.As<T>().data(), n, x, nrhs);
      break;
    }
  }
  result.stats.flops = SolveFlops(f, nrhs, options.residual);
  result.stats.bytes_moved = f.factor.byte_size() + f.r.byte_size() + f.permutation.byte_size() +
                             rhs.byte_size() + 2 * result.x.byte_size();
  if (!options.residual) return result;

  // R = B - op(A) X.
  const MatrixView& a = f.input;
  Matrix residual = Matrix::CopyOf(rhs);
  const blasint inner = options.transpose == SolveTranspose::kNone ? n : m;
  Gemm<T>(OpOf(options.transpose), CblasNoTrans, static_cast<blasint>(rhs.rows), nrhs, inner, T(-1),
          a.As<T>().data(), n, x, nrhs, T(1), residual.As<T>().data(), nrhs);
  const long double scale =
      FrobeniusNorm<T>(a) * FrobeniusNorm<T>(result.x.view()) + FrobeniusNorm<T>(rhs);
  const long double distance = FrobeniusNorm<T>(residual.view());
  result.residual = scale > 0 ? static_cast<double>(distance / scale) : 0.0;
  result.stats.bytes_moved += a.byte_size() + 3 * rhs.byte_size();
  return result;
}

}  // namespace

absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                  const SolveOptions& options, JobControl* control) {
  if (IsCancelled(control)) return absl::CancelledError("solve cancelled");
  MATRIXD_RETURN_IF_ERROR(CheckSolve(factorization, rhs, options));
  for (const MatrixView* view : {&factorization.factor, &factorization.r,
                                 &factorization.permutation, &factorization.input, &rhs}) {
    if (view->on_device()) {
      return absl::InvalidArgumentError("the CPU backend solves with host matrices only");
    }
  }
  if (factorization.batch_count > 0) {
    return SolveEachMember(
        factorization, rhs, options, control,
        [](const FactorizationView& member, const MatrixView& b, const SolveOptions& o) {
          return Solve(member, b, o, /*control=*/nullptr);
        });
  }
  constexpr int64_t kMaxDim = std::numeric_limits<blasint>::max();
  if (factorization.rows() > kMaxDim || factorization.cols() > kMaxDim || rhs.cols > kMaxDim) {
    return absl::InvalidArgumentError(absl::StrCat("solve of ", factorization.rows(), "x",
                                                   factorization.cols(), " with ", rhs.cols,
                                                   " right-hand sides exceeds BLAS's int range"));
  }
  absl::StatusOr<SolveResult> result;
  switch (rhs.dtype) {
    case DType::kFloat32:
      result = SolveTyped<float>(factorization, rhs, options);
      break;
    case DType::kFloat64:
      result = SolveTyped<double>(factorization, rhs, options);
      break;
    case DType::kComplex64:
      result = SolveTyped<std::complex<float>>(factorization, rhs, options);
      break;
    default:
      result = SolveTyped<std::complex<double>>(factorization, rhs, options);
      break;
  }
  if (result.ok()) ReportProgress(control, 1.0);
  return result;
}

}  // namespace matrixd::cpu
